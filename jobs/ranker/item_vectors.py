"""The embedding route's item vectors: a factorisation of the train period's co-visits.

The worker's embedding route searches these vectors (``embeddings.npy``). They
come from the events alone, not from the ranker, so that training can replay the
route before the ranker exists: the positive pointwise mutual information of
"clicked within one window of each other", factored by a truncated SVD and
normalised, so an inner product is a cosine. Items with no co-visit keep a zero
vector (the route reaches them by category centroid and the other routes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
from scipy.sparse.linalg import svds  # type: ignore[import-untyped]

from jobs.ranker.events import Events
from jobs.ranker.windows import F32
from schemas.ranking import FIRST_ID_INDEX, Vocabulary
from schemas.windows import WINDOW_MS

DIM = 32


def covisit_pairs(events: Events, vocab: Vocabulary) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Vocabulary indexes of every ordered pair of distinct items one user touched within
    ``WINDOW_MS`` of each other (both directions)."""
    order = np.lexsort((events.ts, events.user))
    users, times = events.user[order], events.ts[order]
    items = vocab.item_index(events.item[order]).astype(np.int64)
    left: list[npt.NDArray[Any]] = []
    right: list[npt.NDArray[Any]] = []
    for lag in range(1, 64):  # a user's events within one window, as far back as 63
        same = (users[lag:] == users[:-lag]) & (times[lag:] - times[:-lag] < WINDOW_MS)
        same &= items[lag:] != items[:-lag]
        if not same.any():
            break
        a, b = items[:-lag][same], items[lag:][same]
        left += [a, b]
        right += [b, a]
    if not left:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(left), np.concatenate(right)


def item_vectors(events: Events, vocab: Vocabulary, dim: int = DIM) -> F32:
    """``[vocab.num_items, dim]`` unit vectors (zero for pad, OOV and items never co-visited)."""
    size = vocab.num_items
    out = np.zeros((size, dim), dtype=np.float32)
    rows, cols = covisit_pairs(events, vocab)
    known = (rows >= FIRST_ID_INDEX) & (cols >= FIRST_ID_INDEX)
    rows, cols = rows[known], cols[known]
    if len(rows) == 0:
        return out
    counts = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size)).tocsr()
    counts.sum_duplicates()
    total = counts.sum()
    marginal = np.asarray(counts.sum(axis=1)).ravel()
    cells = counts.tocoo()
    pmi = np.log(cells.data * total / (marginal[cells.row] * marginal[cells.col]))
    keep = pmi > 0
    ppmi = coo_matrix((pmi[keep], (cells.row[keep], cells.col[keep])), shape=(size, size))
    rank = min(dim, size - 2)
    if ppmi.nnz == 0 or rank < 1:
        return out
    left, values, _ = svds(ppmi.tocsr(), k=rank, rng=np.random.default_rng(0))
    vectors = left * np.sqrt(values)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    out[:, :rank] = vectors.astype(np.float32)
    return out
