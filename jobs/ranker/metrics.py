"""AUC and ranking metrics over candidate sets whose column 0 is the true item.

Ties are split evenly (a tie counts half above and half below), so a baseline
that gives many candidates the same score gets its expected metric, not a
lucky or unlucky one from the sort order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Scores = npt.NDArray[np.floating[Any]]


def average_ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1-based ranks, tied values sharing their average rank."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(values)])
    group = np.repeat(np.arange(len(starts)), sizes)
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = (starts + (sizes + 1) / 2.0)[group]
    return ranks


def auc(scores: Scores, labels: Scores) -> float:
    """Area under the ROC curve (Mann-Whitney with average ranks for ties)."""
    flat, truth = np.ravel(scores).astype(np.float64), np.ravel(labels) > 0.5
    positives, negatives = int(truth.sum()), int((~truth).sum())
    if positives == 0 or negatives == 0:
        raise ValueError("AUC needs both positives and negatives")
    ranks = average_ranks(flat)
    return float((ranks[truth].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def true_item_rank(scores: Scores) -> npt.NDArray[np.float64]:
    """0-based rank of column 0 among each row's candidates, ties split evenly."""
    true = scores[:, :1]
    above = (scores[:, 1:] > true).sum(axis=1)
    tied = (scores[:, 1:] == true).sum(axis=1)
    rank: npt.NDArray[np.float64] = (above + tied / 2).astype(np.float64)
    return rank


def recall_at(rank: npt.NDArray[np.float64], k: int) -> float:
    return float((rank < k).mean())


def ndcg_at(rank: npt.NDArray[np.float64], k: int) -> float:
    """One relevant item per row, so IDCG is 1."""
    gains = np.where(rank < k, 1.0 / np.log2(rank + 2.0), 0.0)
    return float(gains.mean())


def evaluate(scores: Scores, labels: Scores, ks: tuple[int, ...] = (10, 50)) -> dict[str, float]:
    rank = true_item_rank(scores)
    result = {"auc": auc(scores, labels)}
    for k in ks:
        result[f"recall_at_{k}"] = recall_at(rank, k)
        result[f"ndcg_at_{k}"] = ndcg_at(rank, k)
    return result
