"""Baselines scored on the same candidate sets as the model.

* popularity: the candidate's event count in the train split;
* co-visitation: how often the candidate shared a train-split session (a user's
  events with gaps under 30 minutes) with each item of the row's sequence,
  summed; popularity, scaled below 1, breaks its many ties.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jobs.ranker.events import I64, Events
from jobs.ranker.samples import Catalog, Samples

SESSION_GAP_MS = 30 * 60 * 1000
F64 = npt.NDArray[np.float64]


def popularity_scores(catalog: Catalog, samples: Samples) -> F64:
    return catalog.popularity[samples.cand_items].astype(np.float64)


def session_ids(events: Events, gap_ms: int = SESSION_GAP_MS) -> I64:
    """Session number of each event (events sorted by user, then time)."""
    new_user = np.r_[True, events.user[1:] != events.user[:-1]]
    gap = np.r_[True, np.diff(events.ts) > gap_ms]
    sessions: I64 = np.cumsum(new_user | gap).astype(np.int64)
    return sessions


@dataclass(frozen=True)
class CoVisitation:
    """Sorted (item a * N + item b) keys with their session co-occurrence counts.

    Item indexes stay below ~3M, so ``a * N + b`` fits in int64.
    """

    num_items: int
    keys: I64
    counts: I64

    @classmethod
    def from_train(cls, train: Events, catalog: Catalog) -> CoVisitation:
        n = catalog.vocab.num_items
        items = catalog.vocab.item_index(train.item).astype(np.int64)
        sessions = session_ids(train)
        distinct = np.unique(np.stack((sessions, items), axis=1), axis=0)
        bounds = np.flatnonzero(np.r_[True, distinct[1:, 0] != distinct[:-1, 0], True])
        pairs = [
            _pairs(distinct[lo:hi, 1], n) for lo, hi in itertools.pairwise(bounds) if hi - lo > 1
        ]
        all_pairs = np.concatenate(pairs) if pairs else np.zeros(0, np.int64)
        keys, counts = np.unique(all_pairs, return_counts=True)
        # A final sentinel key above any real one: lookups never run off the end.
        sentinel = np.iinfo(np.int64).max
        return cls(n, np.append(keys, sentinel), np.append(counts, 0).astype(np.int64))

    def scores(self, samples: Samples, catalog: Catalog, chunk: int = 2048) -> F64:
        tie_break = catalog.popularity / (catalog.popularity.max() + 1.0)
        out = np.empty(samples.cand_items.shape, dtype=np.float64)
        for lo in range(0, len(samples), chunk):
            seq = samples.seq_items[lo : lo + chunk].astype(np.int64)
            cand = samples.cand_items[lo : lo + chunk].astype(np.int64)
            wanted = seq[:, :, None] * self.num_items + cand[:, None, :]
            found = np.searchsorted(self.keys, wanted)  # the sentinel keeps it in range
            hit = (self.keys[found] == wanted) & (seq[:, :, None] >= 2)  # no pad, no OOV
            counts = np.where(hit, self.counts[found], 0)
            out[lo : lo + chunk] = counts.sum(axis=1) + tie_break[cand]
        return out


def _pairs(items: I64, n: int) -> I64:
    a, b = np.meshgrid(items, items, indexing="ij")
    off_diagonal = a != b
    keys: I64 = (a[off_diagonal] * n + b[off_diagonal]).astype(np.int64)
    return keys
