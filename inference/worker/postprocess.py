"""From scored candidates to the final list (pure): the list itself is shared ground
(``schemas.final_list``); the fallback ranking without the model is the worker's."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.final_list import Scored as Scored
from schemas.final_list import finalize as finalize
from schemas.records import Route


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
        "recent": 0.0022,
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
