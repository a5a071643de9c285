"""Baselines that score the whole catalogue for a batch of click sequences.

Each returns scores [B, num_items - FIRST_ID_INDEX]: column ``j`` is item
index ``j + FIRST_ID_INDEX``, so padding and OOV are never ranked. Every method
fills with popularity scaled below 1 (``popularity_prior``), which orders the
items a method has no signal for without outranking any item it has one for.

* popularity: the prior alone;
* recently clicked first: the sequence's distinct items, most recent first;
* co-visitation: summed co-visitation counts with the sequence's distinct items.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from jobs.ranker.baselines import F64, CoVisitation, distinct_known
from schemas.ranking import FIRST_ID_INDEX, OOV_INDEX

SeqItems = npt.NDArray[np.integer[Any]]


def popularity(seq_items: SeqItems, prior: F64) -> F64:
    """The same popularity order for every row."""
    scores: F64 = np.broadcast_to(
        prior[FIRST_ID_INDEX:], (len(seq_items), len(prior) - FIRST_ID_INDEX)
    )
    return scores


def recent_first(seq_items: SeqItems, prior: F64) -> F64:
    """The row's sequence items above all others, the most recent one highest.

    ``seq_items`` is oldest first (left-padded), so position ``p`` scores
    ``1 + p``; an item clicked twice keeps its latest position (maximum).
    """
    rows, length = seq_items.shape
    scores = np.tile(prior, (rows, 1))
    known = seq_items > OOV_INDEX
    row = np.broadcast_to(np.arange(rows)[:, None], seq_items.shape)[known]
    position = np.broadcast_to(np.arange(1, length + 1, dtype=np.float64), seq_items.shape)
    np.maximum.at(scores, (row, seq_items[known]), position[known])
    ranked: F64 = scores[:, FIRST_ID_INDEX:]
    return ranked


def covisited(seq_items: SeqItems, covisit: CoVisitation, prior: F64) -> F64:
    """Each item's co-visitation counts with the row's distinct sequence items, summed."""
    rows, n = len(seq_items), covisit.num_items
    distinct = distinct_known(seq_items)
    row = np.broadcast_to(np.arange(rows)[:, None], distinct.shape)[distinct > OOV_INDEX]
    start, stop = covisit.neighbours(distinct[distinct > OOV_INDEX])
    # Expand each (row, item) into its run of keys without a Python loop.
    lengths = stop - start
    offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    key = np.repeat(start, lengths) + offsets
    flat = np.repeat(row, lengths).astype(np.int64) * n + covisit.keys[key] % n
    counts = np.bincount(flat, weights=covisit.counts[key], minlength=rows * n)
    scores: F64 = (counts.reshape(rows, n) + prior)[:, FIRST_ID_INDEX:]
    return scores
