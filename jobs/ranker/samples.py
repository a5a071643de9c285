"""Training and evaluation samples: one row per positive event.

A row holds what serving would see just before the event at ``t``: the user's
previous events (strictly before ``t``; the last ``SEQ_LEN`` within the fresh
view's 30-minute horizon, oldest first), the user's and each candidate's window
row (see ``windows``), and the candidates: the true item first, then negatives
drawn from the train split's popularity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jobs.ranker.errors import TrainingDataError
from jobs.ranker.events import I64, Events
from jobs.ranker.windows import (
    F32,
    WindowCounter,
    item_dense,
    latest_window_counts,
    user_dense,
)
from schemas.ranking import PAD_INDEX, SEQ_LEN, Vocabulary
from schemas.windows import HORIZON_MS

I32 = npt.NDArray[np.int32]
# The fresh view's horizon: a user's events of the 30 minutes up to their latest.
_TS_BITS = 42


@dataclass(frozen=True)
class Samples:
    """Model inputs per row (contract shapes), with labels; column 0 is the true item."""

    seq_items: I32  # [N, SEQ_LEN]
    seq_cats: I32
    user_dense: F32  # [N, 4]
    cand_items: I32  # [N, C]
    cand_cats: I32
    cand_dense: F32  # [N, C, 5]
    labels: F32  # [N, C]
    user: I64  # [N] raw user id
    ts: I64  # [N] event time of the positive

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True)
class Catalog:
    """What the train split knows about items: vocabulary, categories, popularity."""

    vocab: Vocabulary
    item_category: I64  # raw category of each item index (0 for pad/OOV)
    popularity: I64  # train events per item index

    @classmethod
    def from_train(cls, train: Events) -> Catalog:
        vocab = Vocabulary.build(train.item.tolist(), train.category.tolist())
        index = vocab.item_index(train.item)
        item_category = np.zeros(vocab.num_items, dtype=np.int64)
        item_category[index] = train.category  # the last event's category wins
        popularity = np.bincount(index, minlength=vocab.num_items).astype(np.int64)
        return cls(vocab, item_category, popularity)

    def popular_raw_items(self, limit: int) -> list[int]:
        """Raw ids of the most frequent train items, most popular first (ties by id)."""
        known = np.arange(2, self.vocab.num_items)
        order = known[np.lexsort((known, -self.popularity[known]))][:limit]
        return [int(i) for i in self.vocab.item_ids[order - 2]]


def unique_positives(events: Events) -> Events:
    """One positive per (user, item, ts): a pv and a cart of the same second are one event."""
    table = np.stack((events.user, events.item, events.ts), axis=1)
    _, first = np.unique(table, axis=0, return_index=True)
    keep = np.zeros(len(events), dtype=bool)
    keep[first] = True
    return events.take(keep)


def sample_negatives(catalog: Catalog, positives: I64, count: int, rng: np.random.Generator) -> I64:
    """Item indexes [N, count] drawn by train popularity, never equal to the row's positive."""
    weights = catalog.popularity.astype(np.float64)
    if (weights > 0).sum() < 2:
        raise TrainingDataError("need at least two train items to sample negatives")
    probs = weights / weights.sum()
    drawn = rng.choice(len(probs), size=(len(positives), count), p=probs)
    clash = drawn == positives[:, None]
    while clash.any():  # redraw only the clashes; a handful per round
        drawn[clash] = rng.choice(len(probs), size=int(clash.sum()), p=probs)
        clash = drawn == positives[:, None]
    return drawn.astype(np.int64)


class SampleBuilder:
    """Builds rows for target events against the full event history."""

    def __init__(
        self, history: Events, catalog: Catalog, sequence_horizon_ms: int = HORIZON_MS
    ) -> None:
        self.history = history
        self.catalog = catalog
        self.sequence_horizon_ms = sequence_horizon_ms
        self.users, position = np.unique(history.user, return_inverse=True)
        # history is sorted by (user, ts), so these keys are sorted too
        self.keys = (position.astype(np.int64) << _TS_BITS) | history.ts
        self.user_start = np.searchsorted(position, np.arange(len(self.users)))
        self.item_index = catalog.vocab.item_index(history.item)
        self.cat_index = catalog.vocab.category_index(history.category)
        self.user_windows = WindowCounter.build(history.user, history.ts, history.behavior)
        self.item_windows = WindowCounter.build(history.item, history.ts, history.behavior)

    def sequences(self, user: I64, ts: I64) -> tuple[I32, I32]:
        """Each target's previous events, last SEQ_LEN, oldest first, left-padded.

        Previous means strictly earlier than the target and, with a horizon, no
        older than ``horizon`` before the user's last earlier event: what the
        fresh view ``user_recent_clicks`` holds when the request comes.
        """
        position = np.searchsorted(self.users, user)
        end = np.searchsorted(self.keys, (position.astype(np.int64) << _TS_BITS) | ts)
        rows = end[:, None] - SEQ_LEN + np.arange(SEQ_LEN)[None, :]
        valid = rows >= self.user_start[position][:, None]
        safe = np.where(valid, rows, 0)
        if self.sequence_horizon_ms:
            last = self.history.ts[np.maximum(end - 1, 0)]
            valid &= self.history.ts[safe] > (last - self.sequence_horizon_ms)[:, None]
        items = np.where(valid, self.item_index[safe], PAD_INDEX).astype(np.int32)
        cats = np.where(valid, self.cat_index[safe], PAD_INDEX).astype(np.int32)
        return items, cats

    def build(self, targets: Events, negatives: int, rng: np.random.Generator) -> Samples:
        vocab = self.catalog.vocab
        positive = vocab.item_index(targets.item).astype(np.int64)
        candidates = np.concatenate(
            (positive[:, None], sample_negatives(self.catalog, positive, negatives, rng)), axis=1
        )
        cand_raw_cat = self.catalog.item_category[candidates]
        cand_raw_cat[:, 0] = targets.category  # the event knows its item's category
        cand_raw = np.where(candidates >= 2, vocab.item_ids[np.maximum(candidates - 2, 0)], -1)
        cand_raw[:, 0] = targets.item
        seq_items, seq_cats = self.sequences(targets.user, targets.ts)
        cand_ts = np.broadcast_to(targets.ts[:, None], candidates.shape).ravel()
        counts = latest_window_counts(self.item_windows, cand_raw.ravel(), cand_ts)
        labels = np.zeros(candidates.shape, dtype=np.float32)
        labels[:, 0] = 1.0
        return Samples(
            seq_items=seq_items,
            seq_cats=seq_cats,
            user_dense=user_dense(
                latest_window_counts(self.user_windows, targets.user, targets.ts)
            ),
            cand_items=candidates.astype(np.int32),
            cand_cats=vocab.category_index(cand_raw_cat.ravel()).reshape(candidates.shape),
            # The width named, not -1: no targets (a small held-out sample on unknown
            # items only) is zero rows of it, which -1 cannot infer.
            cand_dense=item_dense(counts.reshape(*candidates.shape, counts.shape[-1])),
            labels=labels,
            user=targets.user.copy(),
            ts=targets.ts.copy(),
        )
