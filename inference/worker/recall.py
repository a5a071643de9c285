"""Candidate recall: each route proposes items, the merge keeps the first route that did.

Routes, in the merge's priority order: ``request`` (the caller's own list),
``covisit`` (items other users clicked within the window of the user's last
clicks, counted from the stream), ``embedding`` (Faiss nearest neighbours of
the recent clicks), ``trend`` (the top items of the user's recent categories),
``popular`` (cold and unknown users, and filling up short lists). The merge,
the co-visit and the trend routes are pure; only :class:`EmbeddingIndex` holds
state (the Faiss index).

Why ``covisit`` before ``embedding``: it is direct evidence (what people did
right after these very clicks, up to the last writer batch) where the
embedding is a proxy learnt at training time, and it is the only personal route
that reaches items the model never saw. It is also sparse, empty for clicks
nobody else shared, so going first rarely costs the embedding route a slot;
an item both propose is labelled with the stronger evidence.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import faiss
import numpy as np
import numpy.typing as npt

from inference.worker.item_index import AUTO_CHOICE, IndexChoice, build_index
from schemas.ranking import FIRST_ID_INDEX
from schemas.records import Route

ROUTE_ORDER: tuple[Route, ...] = ("request", "covisit", "embedding", "trend", "popular")
# How many of the latest clicks make the user's query vector.
QUERY_CLICKS = 10


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


def recent_categories(categories: Sequence[int], limit: int = 3) -> list[int]:
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
    totals: dict[int, float] = {}
    for pairs in neighbours:
        for item, count in pairs:
            if item not in excluded:
                totals[item] = totals.get(item, 0.0) + count
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


class EmbeddingIndex:
    """Inner-product nearest neighbours over the ranker's item embeddings (pad and OOV left out).

    A click on an item the model never saw still says something: its category.
    Such a click stands in the query as the mean embedding of the model's items
    of that category (when ``item_categories`` is given and the category has
    items), so a user whose clicks are all on new items is not left to popularity.

    ``choice`` is the Faiss index (:mod:`inference.worker.item_index`): exact up
    to 100,000 items by default, an HNSW graph above. Items the
    model has no embedding for (new since training) are not in it; the co-visit
    and trend routes reach them until the next model's embeddings are swapped in
    (:mod:`inference.worker.index_reload`). Out-of-stock items are dropped after
    recall, with every route's (:mod:`inference.worker.postprocess`).
    """

    def __init__(
        self,
        embeddings: npt.NDArray[np.float32],
        raw_ids: npt.NDArray[np.int64],
        item_categories: npt.NDArray[np.int64] | None = None,
        choice: IndexChoice = AUTO_CHOICE,
    ) -> None:
        self._embeddings = embeddings
        self._raw_ids = raw_ids  # raw id of embedding row FIRST_ID_INDEX + i
        self._index: faiss.Index = build_index(embeddings[FIRST_ID_INDEX:], choice)
        self._centroids = (
            category_centroids(embeddings, item_categories) if item_categories is not None else {}
        )

    def query_vectors(
        self,
        click_indexes: Sequence[npt.NDArray[np.int32]],
        click_categories: Sequence[Sequence[int]] | None = None,
    ) -> tuple[npt.NDArray[np.float32], list[int]]:
        """Mean vector of each user's last known clicks; the users that have one.

        A click is known through its item's embedding, or else through its raw
        category's centroid (``click_categories``, aligned with the indexes).
        """
        vectors, users = [], []
        for user, indexes in enumerate(click_indexes):
            categories = click_categories[user] if click_categories is not None else ()
            rows = []
            for position in range(len(indexes) - 1, -1, -1):
                vector = self._click_vector(indexes, categories, position)
                if vector is not None:
                    rows.append(vector)
                    if len(rows) == QUERY_CLICKS:
                        break
            if rows:
                vectors.append(np.mean(rows, axis=0))
                users.append(user)
        if not vectors:
            return np.zeros((0, self._embeddings.shape[1]), np.float32), []
        return np.ascontiguousarray(np.stack(vectors), dtype=np.float32), users

    def _click_vector(
        self, indexes: npt.NDArray[np.int32], categories: Sequence[int], position: int
    ) -> npt.NDArray[np.float32] | None:
        index = int(indexes[position])
        if index >= FIRST_ID_INDEX:
            row: npt.NDArray[np.float32] = self._embeddings[index]
            return row
        if position < len(categories):
            return self._centroids.get(int(categories[position]))
        return None

    def search(
        self,
        click_indexes: Sequence[npt.NDArray[np.int32]],
        k: int,
        click_categories: Sequence[Sequence[int]] | None = None,
    ) -> list[list[int]]:
        """Raw item ids of the ``k`` nearest items for each user (empty without known clicks)."""
        out: list[list[int]] = [[] for _ in click_indexes]
        queries, users = self.query_vectors(click_indexes, click_categories)
        if not users or k < 1:
            return out
        _, rows = self._index.search(queries, min(k, self._index.ntotal))
        for user, found in zip(users, rows, strict=True):
            out[user] = [int(self._raw_ids[r]) for r in found if r >= 0]
        return out


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


def user_routes(
    request_candidates: Iterable[int] | None,
    embedding: Sequence[int],
    trend: Sequence[int],
    popular: Sequence[int],
    covisit: Sequence[int] = (),
) -> dict[Route, Sequence[int]]:
    return {
        "request": list(request_candidates or ()),
        "covisit": covisit,
        "embedding": embedding,
        "trend": trend,
        "popular": popular,
    }
