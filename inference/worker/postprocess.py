"""From scored candidates to the final list (pure): filter, de-duplicate, diversify, top k."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from schemas.records import RecItem, Route


@dataclass(frozen=True)
class Scored:
    item_id: int
    score: float
    route: Route
    category_id: int  # 0 = unknown; unknown categories are not capped


def finalize(
    scored: Sequence[Scored],
    k: int,
    excluded: Collection[int] = (),
    out_of_stock: Collection[int] = (),
    max_per_category: int = 3,
) -> list[RecItem]:
    """The best ``k`` items, best first.

    Drops ``excluded`` (just viewed or bought), ``out_of_stock`` and repeats.
    At most ``max_per_category`` items of one category, unless that leaves fewer
    than ``k`` items: then the best of the capped ones fill the list, so a user
    who only browses one category still gets ``k`` answers.
    """
    ranked = sorted(scored, key=lambda s: -s.score)  # stable: ties keep recall order
    chosen: list[Scored] = []
    held_back: list[Scored] = []
    seen: set[int] = set()
    per_category: dict[int, int] = {}
    for item in ranked:
        if item.item_id in seen or item.item_id in excluded or item.item_id in out_of_stock:
            continue
        seen.add(item.item_id)
        count = per_category.get(item.category_id, 0)
        if item.category_id and count >= max_per_category:
            held_back.append(item)
            continue
        per_category[item.category_id] = count + 1
        chosen.append(item)
        if len(chosen) == k:
            break
    if len(chosen) < k:
        chosen = sorted(chosen + held_back[: k - len(chosen)], key=lambda s: -s.score)
    return [RecItem(item_id=s.item_id, score=s.score, route=s.route) for s in chosen]


def fallback_scores(
    trend_scores: Sequence[float], routes: Sequence[Route], popular_rank: Sequence[int | None]
) -> list[float]:
    """A ranking without the model: item trend, then popularity, then route (pure).

    Scores land in (0, 1) like the model's, higher is better: the window's weighted
    counts dominate, the global popularity rank breaks ties, and a caller's own
    candidates come before recalled ones when nothing else is known.
    """
    route_prior = {
        "request": 0.003,
        "covisit": 0.0025,
        "embedding": 0.002,
        "trend": 0.001,
        "popular": 0.0,
    }
    scores = []
    for trend, route, rank in zip(trend_scores, routes, popular_rank, strict=True):
        trend_part = trend / (trend + 10.0)
        popular_part = 1.0 / (rank + 2.0) if rank is not None else 0.0
        scores.append(0.9 * trend_part + 0.09 * popular_part + route_prior[route])
    return scores
