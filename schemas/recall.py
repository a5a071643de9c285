"""Candidate recall as shared ground: the routes, their merge and their limits (pure).

The worker recalls from what the online store holds; training replays the store
over its period and recalls with these very functions (``jobs.ranker.store_replay``),
so the ranker learns on the candidate lists serving hands it. Neither side restates
any of it.

Routes, in the merge's priority order: ``request`` (the caller's own list),
``covisit`` (items other users clicked within the window of the user's last
clicks, counted from the stream), ``recent`` (the user's own items: the fresh
view's, then the longer history's, most recent first), ``embedding`` (nearest
neighbours of the recent clicks), ``trend`` (the top items of the user's recent
categories), ``popular`` (cold and unknown users, and filling up short lists).

The merge order labels an item with its strongest evidence and decides what a
full list keeps; it is not meant as a ranking. Without a ranker (``norank``) the
answer is this order; ``recent-first`` (the user's own items by recency, then the
rest) is the heuristic a ranker must beat too. ``covisit`` goes before ``recent``
because it is what people did right after these very clicks; ``recent`` before
``embedding`` because a return to an item is the commonest next step on a shop
(on the Taobao 9-day file's last day, 46% of requests were followed by an item the
user had touched in the 24 hours before).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from schemas.ranking import FIRST_ID_INDEX
from schemas.records import Route

ROUTE_ORDER: tuple[Route, ...] = ("request", "covisit", "recent", "embedding", "trend", "popular")
# How many of the latest clicks make the user's query vector.
QUERY_CLICKS = 10
# How many of the user's recent categories the trend route reads.
TREND_CATEGORIES = 3


@dataclass(frozen=True)
class RecallLimits:
    """How many items each route proposes, and how many the merge keeps.

    The worker's settings default to these, and training recalls with the values it
    saves in the model's manifest: a ranker is trained on lists of the shape it ranks.
    """

    recent: int = 30
    covisit: int = 40
    covisit_clicks: int = 5
    embedding: int = 40
    trend: int = 40
    popular: int = 50
    max_candidates: int = 100


@dataclass(frozen=True)
class Candidate:
    item_id: int
    route: Route


def merge_routes(
    routes: Mapping[Route, Sequence[int]], limit: int, min_count: int = 0
) -> list[Candidate]:
    """Merge route proposals in :data:`ROUTE_ORDER`, the first route of an item recorded.

    ``popular`` only tops the list up to ``min_count`` unless it is the only route.
    At most ``limit`` candidates.
    """
    merged: list[Candidate] = []
    seen: set[int] = set()
    for route in ROUTE_ORDER:
        cap = limit
        if route == "popular" and merged:
            cap = min(limit, min_count)
        for item in routes.get(route, ()):
            if len(merged) >= cap:
                break
            if item not in seen:
                seen.add(item)
                merged.append(Candidate(item, route))
    return merged


def recent_categories(categories: Sequence[int], limit: int = TREND_CATEGORIES) -> list[int]:
    """The user's distinct categories, most recent first (``categories`` oldest first)."""
    out: list[int] = []
    for category in reversed(categories):
        if category and category not in out:
            out.append(category)
            if len(out) == limit:
                break
    return out


def recent_items(items: Sequence[int], limit: int) -> list[int]:
    """The user's distinct clicked items, most recent first (``items`` oldest first)."""
    out: list[int] = []
    for item in reversed(items):
        if len(out) == limit:
            break
        if item not in out:
            out.append(item)
    return out


def own_items(
    fresh_items: Sequence[int],
    history_items: Sequence[int],
    limit: int,
    excluded: Collection[int] = frozenset(),
) -> list[int]:
    """The ``recent`` route: the fresh view's items most recent first (``fresh_items``
    oldest first), then the history's (``history_items`` most recent first), each once,
    without ``excluded`` (items post-processing drops anyway)."""
    out: list[int] = []
    seen: set[int] = set(excluded)
    for item in (*reversed(fresh_items), *history_items):
        if len(out) == limit:
            break
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def covisit_totals(
    neighbours: Sequence[Sequence[tuple[int, float]]], excluded: Collection[int] = frozenset()
) -> dict[int, float]:
    """Items co-visited with the user's last clicks and their summed counts, in the order
    of first appearance (the most recent click's list first)."""
    totals: dict[int, float] = {}
    for pairs in neighbours:
        for item, count in pairs:
            if item not in excluded:
                totals[item] = totals.get(item, 0.0) + count
    return totals


def covisit_items(
    neighbours: Sequence[Sequence[tuple[int, float]]],
    limit: int,
    excluded: Collection[int] = frozenset(),
) -> list[int]:
    """Items co-visited with the user's last clicks, by summed count, best first.

    ``neighbours`` holds each clicked item's ``(item, count)`` list. Ties keep
    the order of first appearance (the most recent click's list first).
    ``excluded`` are the items post-processing drops anyway (just viewed or
    bought): leaving them out here keeps their slots for items that can be shown.
    """
    totals = covisit_totals(neighbours, excluded)
    return sorted(totals, key=lambda item: -totals[item])[:limit]


def trend_items(top_items_by_category: Sequence[Sequence[int]], limit: int) -> list[int]:
    """Interleave the categories' trending items (best first in each) up to ``limit``."""
    out: list[int] = []
    seen: set[int] = set()
    depth = max((len(items) for items in top_items_by_category), default=0)
    for rank in range(depth):
        for items in top_items_by_category:
            if rank < len(items) and items[rank] not in seen:
                seen.add(items[rank])
                out.append(items[rank])
                if len(out) == limit:
                    return out
    return out


def user_routes(
    request_candidates: Iterable[int] | None,
    embedding: Sequence[int],
    trend: Sequence[int],
    popular: Sequence[int],
    covisit: Sequence[int] = (),
    recent: Sequence[int] = (),
) -> dict[Route, Sequence[int]]:
    return {
        "request": list(request_candidates or ()),
        "covisit": covisit,
        "recent": recent,
        "embedding": embedding,
        "trend": trend,
        "popular": popular,
    }


# -- the embedding route's query (the search itself is the worker's Faiss index) ------


def category_centroids(
    embeddings: npt.NDArray[np.float32], item_categories: npt.NDArray[np.int64]
) -> dict[int, npt.NDArray[np.float32]]:
    """Raw category id -> the mean embedding of the model's items of that category (pure)."""
    categories = item_categories[FIRST_ID_INDEX:]
    known = categories > 0
    found, member_of = np.unique(categories[known], return_inverse=True)
    sums = np.zeros((len(found), embeddings.shape[1]), dtype=np.float64)
    np.add.at(sums, member_of, embeddings[FIRST_ID_INDEX:][known])
    means = (sums / np.bincount(member_of)[:, None]).astype(np.float32)
    return {int(category): means[n] for n, category in enumerate(found)}


def query_vector(
    embeddings: npt.NDArray[np.float32],
    click_indexes: npt.NDArray[np.int32],
    click_categories: Sequence[int],
    centroids: Mapping[int, npt.NDArray[np.float32]],
) -> npt.NDArray[np.float32] | None:
    """The mean vector of a user's last :data:`QUERY_CLICKS` known clicks (oldest first
    in ``click_indexes``), None without one.

    A click is known through its item's embedding, or else through its raw category's
    centroid (``click_categories``, aligned with the indexes): a click on an item the
    model never saw still says something.
    """
    rows = []
    for position in range(len(click_indexes) - 1, -1, -1):
        index = int(click_indexes[position])
        vector: npt.NDArray[np.float32] | None = None
        if index >= FIRST_ID_INDEX:
            vector = embeddings[index]
        elif position < len(click_categories):
            vector = centroids.get(int(click_categories[position]))
        if vector is not None:
            rows.append(vector)
            if len(rows) == QUERY_CLICKS:
                break
    if not rows:
        return None
    mean: npt.NDArray[np.float32] = np.mean(rows, axis=0).astype(np.float32)
    return mean


def recent_first_scores(candidates: Sequence[Candidate], recent: Sequence[int]) -> list[float]:
    """The ``recent-first`` order as scores in (0, 1], higher first (pure): the user's own
    items by recency (the ``recent`` route's order), then the rest in merge order."""
    own = {item: position for position, item in enumerate(recent)}
    size = len(candidates) + len(own) + 1
    return [
        1.0 - own[c.item_id] / size if c.item_id in own else 0.5 - position / (2 * size)
        for position, c in enumerate(candidates)
    ]


def merge_order_scores(count: int) -> list[float]:
    """The ``norank`` order as scores in (0, 1], higher first: the merge's own order."""
    return [1.0 - position / (count + 1) for position in range(count)]
