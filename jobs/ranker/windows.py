"""Window counts as the serving path reads them from the Flink features.

The feature job counts each user's and each item's events per behaviour in HOP
windows (30 minutes, sliding 5, aligned to the epoch); the writer overwrites
one online row per user (``user_click_window``) and per item (``item_trends``)
with each closed window, and the worker reads that row as it is. So at a
request at ``t`` serving sees the *latest window that had an event and closed
by* ``b``, the last slide boundary ``<= t``: the newest closed window if the
entity was active in it, else the last window of its last activity (stale but
still the row in the store). Its events all lie before ``b``, so never the
current event nor anything later. Entities with no earlier event count zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jobs.ranker.events import I8, I64
from schemas.ranking import ITEM_DENSE_FEATURES, USER_DENSE_FEATURES
from schemas.windows import SLIDE_MS, WINDOW_MS

_TS_BITS = 42  # epoch millis stay below 2**42 until the year 2109
F32 = npt.NDArray[np.float32]


def last_window(ts: I64, window_ms: int = WINDOW_MS, slide_ms: int = SLIDE_MS) -> tuple[I64, I64]:
    """(start, end) of the newest window closed at ``ts``: end = last slide boundary <= ts."""
    end = ts - ts % slide_ms
    return end - window_ms, end


@dataclass(frozen=True)
class WindowCounter:
    """Per-behaviour event counts of one entity kind (users or items) over time ranges."""

    entities: I64  # sorted distinct entity ids
    keys: I64  # sorted (entity position << 42) | ts
    cumulative: npt.NDArray[np.int64]  # [len(keys) + 1, 4]: counts before each key

    @classmethod
    def build(cls, entity: I64, ts: I64, behavior: I8) -> WindowCounter:
        entities, position = np.unique(entity, return_inverse=True)
        keys = (position.astype(np.int64) << _TS_BITS) | ts
        order = np.argsort(keys, kind="stable")
        onehot = np.zeros((len(keys) + 1, len(USER_DENSE_FEATURES)), dtype=np.int64)
        onehot[np.arange(1, len(keys) + 1), behavior[order]] = 1
        return cls(entities, keys[order], np.cumsum(onehot, axis=0))

    def _positions(self, entity: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        if not len(self.entities):
            return np.zeros_like(entity), np.zeros(entity.shape, dtype=bool)
        position = np.clip(np.searchsorted(self.entities, entity), 0, len(self.entities) - 1)
        return position.astype(np.int64), self.entities[position] == entity

    def last_before(self, entity: I64, ts: I64) -> I64:
        """Time of each entity's last event strictly before ``ts``; -1 when none."""
        position, known = self._positions(entity)
        found = np.searchsorted(self.keys, (position << _TS_BITS) | ts, side="left") - 1
        safe = np.maximum(found, 0)
        same_entity = (found >= 0) & ((self.keys[safe] >> _TS_BITS) == position) & known
        last: I64 = np.where(same_entity, self.keys[safe] & ((1 << _TS_BITS) - 1), -1)
        return last

    def counts(self, entity: I64, start: I64, end: I64) -> npt.NDArray[np.int64]:
        """Counts [..., 4] (pv, cart, fav, buy) of ``entity``'s events in ``[start, end)``."""
        flat, lo, hi = (np.ravel(a) for a in np.broadcast_arrays(entity, start, end))
        position, known = self._positions(flat)
        base = position << _TS_BITS
        left = np.searchsorted(self.keys, base | lo, side="left")
        right = np.searchsorted(self.keys, base | hi, side="left")
        found = self.cumulative[right] - self.cumulative[left]
        found[~known] = 0
        shape = np.broadcast_shapes(np.shape(entity), np.shape(start), np.shape(end))
        shaped: npt.NDArray[np.int64] = found.reshape(*shape, len(USER_DENSE_FEATURES))
        return shaped


def latest_window_counts(
    counter: WindowCounter,
    entity: I64,
    ts: I64,
    window_ms: int = WINDOW_MS,
    slide_ms: int = SLIDE_MS,
) -> npt.NDArray[np.int64]:
    """Counts [N, 4] of the window row serving reads for ``entity`` at ``ts`` (see above)."""
    _, boundary = last_window(ts, window_ms, slide_ms)
    last_event = counter.last_before(entity, boundary)
    active = last_event >= 0
    # The last window holding the last event ends at its slide start + window,
    # unless a newer window (up to the boundary) also holds it.
    end = np.minimum(boundary, last_event - last_event % slide_ms + window_ms)
    counts = counter.counts(entity, end - window_ms, end)
    counts[~active] = 0
    return counts


def user_dense(counts: npt.NDArray[np.int64]) -> F32:
    """``contract.user_dense_vector`` over a counts array [..., 4]."""
    dense = np.log1p(counts.astype(np.float64)).astype(np.float32)
    assert dense.shape[-1] == len(USER_DENSE_FEATURES)
    return dense


def item_dense(counts: npt.NDArray[np.int64]) -> F32:
    """``contract.item_dense_vector`` over counts [..., 4]: log1p counts and buy / pv."""
    pv, buy = counts[..., 0].astype(np.float64), counts[..., 3].astype(np.float64)
    conversion = np.divide(buy, pv, out=np.zeros_like(pv), where=pv > 0)
    dense = np.concatenate((np.log1p(counts.astype(np.float64)), conversion[..., None]), axis=-1)
    assert dense.shape[-1] == len(ITEM_DENSE_FEATURES)
    as_f32: F32 = dense.astype(np.float32)
    return as_f32
