"""The embedding route's Faiss search, the one stateful part of recall.

The routes, their merge and their limits are pure shared ground in
:mod:`schemas.recall` (training replays them over its period); they are
re-exported here for the worker's modules. :class:`EmbeddingIndex` holds the
Faiss index over the served model's item embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence

import faiss
import numpy as np
import numpy.typing as npt

from inference.worker.item_index import AUTO_CHOICE, IndexChoice, build_index
from schemas.ranking import FIRST_ID_INDEX
from schemas.recall import (
    QUERY_CLICKS,
    ROUTE_ORDER,
    Candidate,
    category_centroids,
    covisit_items,
    merge_routes,
    query_vector,
    recent_categories,
    recent_items,
    trend_items,
    user_routes,
)

__all__ = [
    "QUERY_CLICKS",
    "ROUTE_ORDER",
    "Candidate",
    "EmbeddingIndex",
    "covisit_items",
    "merge_routes",
    "recent_categories",
    "recent_items",
    "trend_items",
    "user_routes",
]


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
            vector = query_vector(self._embeddings, indexes, categories, self._centroids)
            if vector is not None:
                vectors.append(vector)
                users.append(user)
        if not vectors:
            return np.zeros((0, self._embeddings.shape[1]), np.float32), []
        return np.ascontiguousarray(np.stack(vectors), dtype=np.float32), users

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
