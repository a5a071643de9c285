"""Popularity and co-visitation, the baselines the ranker must beat.

* popularity: the item's event count in the train split;
* co-visitation: how many train-split users clicked both items within 30
  minutes of each other (pairs counted once per user, as the usual
  co-visitation matrices do, so one user's repeated views of a pair do not
  outweigh many users), summed over the distinct items of the row's sequence;
  popularity, scaled below 1, breaks its many ties.

Both score either the sampled candidate sets (``popularity_scores``,
``CoVisitation.scores``) or the whole catalogue (``retrieval``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from jobs.ranker.events import I64, Events
from jobs.ranker.samples import Catalog, Samples
from schemas.ranking import OOV_INDEX

COVISIT_WINDOW_MS = 30 * 60 * 1000
F64 = npt.NDArray[np.float64]
# ts fits in 42 bits until 2109, so (user position << 42) | ts orders by user, then time.
_TS_BITS = 42


def popularity_scores(catalog: Catalog, samples: Samples) -> F64:
    return catalog.popularity[samples.cand_items].astype(np.float64)


def popularity_prior(catalog: Catalog) -> F64:
    """Train popularity scaled into [0, 1): a tie-break that never outranks a real signal."""
    prior: F64 = catalog.popularity / (catalog.popularity.max() + 1.0)
    return prior


def window_pairs(events: Events, items: I64, window_ms: int = COVISIT_WINDOW_MS) -> I64:
    """(user, item a, item b) of every ordered pair of a user's events at most
    ``window_ms`` apart, a != b, as rows [P, 3]; events sorted by (user, ts)."""
    _, position = np.unique(events.user, return_inverse=True)
    keys = (position.astype(np.int64) << _TS_BITS) | events.ts
    # Same-user events within the window follow each event directly (sorted keys).
    ends = np.searchsorted(keys, keys + window_ms, side="right")
    counts = ends - np.arange(len(keys)) - 1
    first = np.repeat(np.arange(len(keys)), counts)
    step = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    second = first + 1 + step
    a, b, user = items[first], items[second], events.user[first]
    differ = a != b
    forward = np.stack((user, a, b), axis=1)[differ]
    backward = np.stack((user, b, a), axis=1)[differ]
    pairs: I64 = np.concatenate((forward, backward)).astype(np.int64)
    return pairs


@dataclass(frozen=True)
class CoVisitation:
    """Sorted (item a * N + item b) keys with how many users co-visited a and b.

    Item indexes stay below ~3M, so ``a * N + b`` fits in int64; the keys of one
    item ``a`` are the contiguous run ``[a * N, (a + 1) * N)``.
    """

    num_items: int
    keys: I64
    counts: I64

    @classmethod
    def from_train(
        cls, train: Events, catalog: Catalog, window_ms: int = COVISIT_WINDOW_MS
    ) -> CoVisitation:
        n = catalog.vocab.num_items
        items = catalog.vocab.item_index(train.item).astype(np.int64)
        per_user = np.unique(window_pairs(train, items, window_ms), axis=0)  # once per user
        keys, counts = np.unique(per_user[:, 1] * n + per_user[:, 2], return_counts=True)
        # A final sentinel key above any real one: lookups never run off the end.
        sentinel = np.iinfo(np.int64).max
        return cls(n, np.append(keys, sentinel), np.append(counts, 0).astype(np.int64))

    def scores(self, samples: Samples, catalog: Catalog, chunk: int = 2048) -> F64:
        """Co-visitation with the row's distinct sequence items, for each sampled candidate."""
        tie_break = popularity_prior(catalog)
        out = np.empty(samples.cand_items.shape, dtype=np.float64)
        for lo in range(0, len(samples), chunk):
            seq = distinct_known(samples.seq_items[lo : lo + chunk])
            cand = samples.cand_items[lo : lo + chunk].astype(np.int64)
            wanted = seq[:, :, None] * self.num_items + cand[:, None, :]
            found = np.searchsorted(self.keys, wanted)  # the sentinel keeps it in range
            hit = (self.keys[found] == wanted) & (seq[:, :, None] > OOV_INDEX)
            counts = np.where(hit, self.counts[found], 0)
            out[lo : lo + chunk] = counts.sum(axis=1) + tie_break[cand]
        return out

    def neighbours(self, item: I64) -> tuple[I64, I64]:
        """(start, stop) of each item's run of keys: its co-visited items and counts."""
        bounds = np.searchsorted(self.keys, np.stack((item, item + 1)) * self.num_items)
        start: I64 = bounds[0].astype(np.int64)
        stop: I64 = bounds[1].astype(np.int64)
        return start, stop


def distinct_known(seq_items: npt.NDArray[np.integer[Any]]) -> I64:
    """Each row's items with repeats, padding and OOV set to PAD (0): one vote per item."""
    ordered = np.sort(seq_items.astype(np.int64), axis=1)
    repeat = np.zeros(ordered.shape, dtype=bool)
    repeat[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    distinct: I64 = np.where(repeat | (ordered <= OOV_INDEX), 0, ordered)
    return distinct
