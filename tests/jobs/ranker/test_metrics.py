"""AUC, recall@K and NDCG@K on hand-computed cases, ties split evenly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jobs.ranker.metrics import (
    auc,
    average_ranks,
    evaluate,
    ndcg_at,
    recall_at,
    true_item_rank,
)


def test_auc_of_perfect_reversed_and_constant_scores() -> None:
    labels = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.float32)
    assert auc(np.array([[0.9, 0.1, 0.2], [0.8, 0.3, 0.1]]), labels) == 1.0
    assert auc(np.array([[0.0, 0.1, 0.2], [0.0, 0.3, 0.1]]), labels) == 0.0
    assert auc(np.zeros((2, 3)), labels) == 0.5


def test_auc_counts_pairs_across_rows() -> None:
    # positives 0.5, 0.2; negatives 0.4, 0.1, 0.6, 0.3: 3 + 1 of 8 pairs ordered right
    scores = np.array([[0.5, 0.4, 0.1], [0.2, 0.6, 0.3]])
    labels = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.float32)
    assert auc(scores, labels) == pytest.approx(4 / 8)


def test_auc_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both"):
        auc(np.array([[0.3]]), np.array([[1.0]]))


def test_rank_splits_ties_and_metrics_follow() -> None:
    scores = np.array([[0.9, 0.1, 0.2], [0.1, 0.5, 0.6], [0.5, 0.5, 0.5]])
    rank = true_item_rank(scores)
    assert rank.tolist() == [0.0, 2.0, 1.0]
    assert recall_at(rank, 1) == pytest.approx(1 / 3)
    assert recall_at(rank, 2) == pytest.approx(2 / 3)
    assert ndcg_at(rank, 2) == pytest.approx((1 + 1 / math.log2(3)) / 3)


def test_evaluate_reports_every_k_with_hand_computed_values() -> None:
    scores = np.array([[0.9, 0.1, 0.2], [0.1, 0.5, 0.6]])
    labels = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.float32)
    # Pooled AUC: positive 0.9 beats all four negatives (4); positive 0.1 ties the
    # negative 0.1 (0.5) and loses to 0.2, 0.5, 0.6: 4.5 of 2 x 4 pairs = 0.5625.
    # The true item ranks first in row 1 and last (rank 2) in row 2, so recall@1 =
    # recall@2 = 1/2 and nDCG@1 = nDCG@2 = (1 + 0) / 2.
    assert evaluate(scores, labels, ks=(1, 2)) == {
        "auc": pytest.approx(0.5625),
        "recall_at_1": pytest.approx(0.5),
        "ndcg_at_1": pytest.approx(0.5),
        "recall_at_2": pytest.approx(0.5),
        "ndcg_at_2": pytest.approx(0.5),
    }


def test_average_ranks_share_ties() -> None:
    values = np.array([0.3, 0.1, 0.3, 0.2, 0.3])
    assert average_ranks(values).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]
