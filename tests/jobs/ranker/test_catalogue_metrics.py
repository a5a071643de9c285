"""Whole-catalogue recall@K and NDCG@K on a 5-item catalogue computed by hand.

Three events on known items and one on an item the train split never saw:

| event | scores of items 0..4 | true item | above | tied |
|---|---|---|---|---|
| 1 | 0.5 0.4 0.9 0.1 0.2 | 2 | 0 | 0 |
| 2 | 0.9 0.8 0.1 0.7 0.6 | 4 | 3 | 0 |
| 3 | 0.3 0.3 0.3 0.9 0.3 | 0 | 1 | 3 |
| 4 | (unseen item) | - | - | - |

Event 3's true item is equally likely at positions 1, 2, 3, 4 (0-based).
Recall@2 = (1 + 0 + 1/4 + 0) / 4 = 5/16. A version that dropped event 4 would
give 5/12, one that broke ties in the true item's favour 1/2, the average-rank
shortcut (rank 1 + 3/2 = 2.5, a miss) 1/4: each fails the test below.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from jobs.ranker.catalogue_metrics import (
    Positions,
    ndcg_at,
    positions,
    ranking_metrics,
    recall_at,
)

SCORES = np.array(
    [
        [0.5, 0.4, 0.9, 0.1, 0.2],
        [0.9, 0.8, 0.1, 0.7, 0.6],
        [0.3, 0.3, 0.3, 0.9, 0.3],
    ]
)
TRUE = np.array([2, 4, 0])


def _found() -> Positions:
    seen = positions(SCORES, TRUE)
    return Positions(seen.above, seen.tied, unseen=1)


def test_positions_count_items_above_and_tied_with_the_true_one() -> None:
    found = positions(SCORES, TRUE)
    assert found.above.tolist() == [0, 3, 1]
    assert found.tied.tolist() == [0, 0, 3]
    assert found.rows == 3


def test_recall_by_hand_with_ties_and_an_unseen_item_as_a_miss() -> None:
    found = _found()
    assert recall_at(found, 1) == pytest.approx(1 / 4)  # event 1 only
    assert recall_at(found, 2) == pytest.approx(5 / 16)
    assert recall_at(found, 5) == pytest.approx(3 / 4)  # the unseen one caps it


def test_ndcg_by_hand_with_ties_and_an_unseen_item_as_a_miss() -> None:
    found = _found()
    assert ndcg_at(found, 2) == pytest.approx((1 + 1 / (4 * math.log2(3))) / 4)
    tie_gains = sum(1 / math.log2(p + 2) for p in (1, 2, 3, 4)) / 4
    assert ndcg_at(found, 5) == pytest.approx((1 + 1 / math.log2(5) + tie_gains) / 4)
    assert ranking_metrics(found, ks=(2,)) == {
        "recall_at_2": pytest.approx(5 / 16),
        "ndcg_at_2": pytest.approx((1 + 1 / (4 * math.log2(3))) / 4),
    }


def test_tie_expectation_equals_the_mean_over_every_tie_order() -> None:
    """Brute force: rank each row under every order of its tied items and average."""
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 3, size=(6, 6)).astype(np.float64)  # many ties
    true = rng.integers(0, 6, size=6)
    found = positions(scores, true)
    for k in (1, 2, 4):
        recalls, gains = [], []
        for row, column in enumerate(true):
            tied = [j for j in range(6) if scores[row, j] == scores[row, column]]
            above = int((scores[row] > scores[row, column]).sum())
            places = [above + order.index(column) for order in itertools.permutations(tied)]
            recalls.append(np.mean([p < k for p in places]))
            gains.append(np.mean([1 / math.log2(p + 2) if p < k else 0.0 for p in places]))
        assert recall_at(found, k) == pytest.approx(np.mean(recalls))
        assert ndcg_at(found, k) == pytest.approx(np.mean(gains))


def test_no_event_at_all_is_an_error_and_only_unseen_ones_score_zero() -> None:
    nothing = Positions(np.zeros(0, np.int64), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="at least one event"):
        recall_at(nothing, 10)
    # only unseen events: every metric is 0, not an error
    assert ranking_metrics(Positions(nothing.above, nothing.tied, unseen=3)) == {
        "recall_at_10": 0.0,
        "ndcg_at_10": 0.0,
        "recall_at_50": 0.0,
        "ndcg_at_50": 0.0,
    }
