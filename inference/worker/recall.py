"""Candidate recall: each route proposes items, the merge keeps the first route that did.

Routes, in the merge's priority order: ``request`` (the caller's own list),
``embedding`` (Faiss nearest neighbours of the recent clicks), ``trend`` (the
top items of the user's recent categories), ``popular`` (cold and unknown users,
and filling up short lists). The merge and the trend route are pure; only
:class:`EmbeddingIndex` holds state (the Faiss index).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import faiss
import numpy as np
import numpy.typing as npt

from schemas.ranking import FIRST_ID_INDEX
from schemas.records import Route

ROUTE_ORDER: tuple[Route, ...] = ("request", "embedding", "trend", "popular")
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
    """Inner-product nearest neighbours over the ranker's item embeddings (pad and OOV left out)."""

    def __init__(self, embeddings: npt.NDArray[np.float32], raw_ids: npt.NDArray[np.int64]) -> None:
        self._embeddings = embeddings
        self._raw_ids = raw_ids  # raw id of embedding row FIRST_ID_INDEX + i
        self._index = faiss.IndexFlatIP(embeddings.shape[1])
        self._index.add(np.ascontiguousarray(embeddings[FIRST_ID_INDEX:]))

    def query_vectors(
        self, click_indexes: Sequence[npt.NDArray[np.int32]]
    ) -> tuple[npt.NDArray[np.float32], list[int]]:
        """Mean embedding of each user's last known clicks; the users that have one."""
        vectors, users = [], []
        for user, indexes in enumerate(click_indexes):
            known = indexes[indexes >= FIRST_ID_INDEX][-QUERY_CLICKS:]
            if known.size:
                vectors.append(self._embeddings[known].mean(axis=0))
                users.append(user)
        if not vectors:
            return np.zeros((0, self._embeddings.shape[1]), np.float32), []
        return np.ascontiguousarray(np.stack(vectors), dtype=np.float32), users

    def search(self, click_indexes: Sequence[npt.NDArray[np.int32]], k: int) -> list[list[int]]:
        """Raw item ids of the ``k`` nearest items for each user (empty without known clicks)."""
        out: list[list[int]] = [[] for _ in click_indexes]
        queries, users = self.query_vectors(click_indexes)
        if not users or k < 1:
            return out
        _, rows = self._index.search(queries, min(k, self._index.ntotal))
        for user, found in zip(users, rows, strict=True):
            out[user] = [int(self._raw_ids[r]) for r in found if r >= 0]
        return out


def user_routes(
    request_candidates: Iterable[int] | None,
    embedding: Sequence[int],
    trend: Sequence[int],
    popular: Sequence[int],
) -> dict[Route, Sequence[int]]:
    return {
        "request": list(request_candidates or ()),
        "embedding": embedding,
        "trend": trend,
        "popular": popular,
    }
