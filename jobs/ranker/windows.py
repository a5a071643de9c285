"""Window counts as the serving path reads them from the Flink features.

The feature job counts each user's and each item's events per behaviour in HOP
windows (30 minutes, sliding 5, aligned to the epoch) and Feast keeps the
latest. When a request arrives at ``t`` the newest closed window is the one
ending at the last slide boundary ``b <= t``: it holds events in
``[b - window, b)``, so never the current event nor anything later. Training
features use exactly that window; an entity with no event in it counts zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from inference.ranking.contract import ITEM_DENSE_FEATURES, USER_DENSE_FEATURES
from jobs.ranker.events import I8, I64

MINUTE_MS = 60 * 1000
WINDOW_MS = 30 * MINUTE_MS
SLIDE_MS = 5 * MINUTE_MS
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

    def counts(self, entity: I64, start: I64, end: I64) -> npt.NDArray[np.int64]:
        """Counts [..., 4] (pv, cart, fav, buy) of ``entity``'s events in ``[start, end)``."""
        flat, lo, hi = (np.ravel(a) for a in np.broadcast_arrays(entity, start, end))
        position = np.clip(np.searchsorted(self.entities, flat), 0, max(len(self.entities) - 1, 0))
        known = self.entities[position] == flat if len(self.entities) else np.zeros_like(flat, bool)
        base = position.astype(np.int64) << _TS_BITS
        left = np.searchsorted(self.keys, base | lo, side="left")
        right = np.searchsorted(self.keys, base | hi, side="left")
        found = self.cumulative[right] - self.cumulative[left]
        found[~known] = 0
        shape = np.broadcast_shapes(np.shape(entity), np.shape(start), np.shape(end))
        shaped: npt.NDArray[np.int64] = found.reshape(*shape, len(USER_DENSE_FEATURES))
        return shaped


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
