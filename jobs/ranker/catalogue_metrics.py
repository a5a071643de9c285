"""Recall@K and NDCG@K of the true item when a method ranks the whole catalogue.

Each held-out event has one true item. Where it sits in a method's ranking is
summed up by two counts: ``above``, the catalogue items scored strictly higher,
and ``tied``, the other items scored the same. A tie is broken at random, so
the true item is equally likely at each position ``above .. above + tied``
and the metrics below are their exact expectations over that draw (a
popularity fill ties thousands of items; any fixed order would be luck).

A held-out event whose item the train split never saw cannot be ranked by any
method here; it is a miss at every cut-off, counted in the denominator
(``Positions.unseen``), never dropped.

Hand check (the unit tests' case): a 5-item catalogue and four events, whose
true items sit at ``above, tied`` = (0, 0), (3, 0), (1, 3), and one unseen.
Recall@2 = (1 + 0 + P(position in {1,2,3,4} < 2) + 0) / 4 = (1 + 1/4) / 4 =
5/16; NDCG@2 = (1 + 0 + (1/4) / log2(3) + 0) / 4. Broken versions give other
numbers: dropping the unseen event gives 5/12, breaking ties in the true
item's favour 1/2, the average-rank shortcut (rank 2.5, a miss) 1/4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Positions:
    """Where each ranked event's true item sits; ``unseen`` events are misses."""

    above: I64
    tied: I64
    unseen: int = 0

    @property
    def rows(self) -> int:
        return len(self.above) + self.unseen

    @classmethod
    def concat(cls, parts: list[Positions]) -> Positions:
        return cls(
            np.concatenate([p.above for p in parts]).astype(np.int64),
            np.concatenate([p.tied for p in parts]).astype(np.int64),
            sum(p.unseen for p in parts),
        )


def positions(scores: F64, true_column: I64) -> Positions:
    """Counts of other items above and tied with each row's true item (a column index)."""
    rows = np.arange(len(scores))
    true = scores[rows, true_column][:, None]
    above = (scores > true).sum(axis=1)
    tied = (scores == true).sum(axis=1) - 1  # not the true item itself
    return Positions(above.astype(np.int64), tied.astype(np.int64))


def _per_event(values: F64, found: Positions) -> float:
    """Sum over the ranked events / all events: an unseen event adds 0 on top."""
    if found.rows == 0:
        raise ValueError("ranking metrics need at least one event")
    return float(values.sum() / found.rows)


def recall_at(found: Positions, k: int) -> float:
    """Expected share of events whose true item is in the top ``k``."""
    return _per_event(np.clip((k - found.above) / (found.tied + 1.0), 0.0, 1.0), found)


def ndcg_at(found: Positions, k: int) -> float:
    """Expected NDCG@k with one relevant item per event (so IDCG = 1)."""
    # gain of 0-based position p is 1 / log2(p + 2); cumulative[j] sums positions < j
    cumulative = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(k) + 2.0))]
    low = np.minimum(found.above, k)
    high = np.minimum(found.above + found.tied + 1, k)
    return _per_event((cumulative[high] - cumulative[low]) / (found.tied + 1.0), found)


def ranking_metrics(found: Positions, ks: tuple[int, ...] = (10, 50)) -> dict[str, float]:
    result = {}
    for k in ks:
        result[f"recall_at_{k}"] = recall_at(found, k)
        result[f"ndcg_at_{k}"] = ndcg_at(found, k)
    return result
