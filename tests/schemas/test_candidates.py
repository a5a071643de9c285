import math

import numpy as np
import numpy.typing as npt
import pytest

from schemas.candidates import HistoryTouch, RequestState, candidate_features, candidate_input
from schemas.ranking import CANDIDATE_FEATURES, ITEM_DENSE_FEATURES, Vocabulary

MINUTE = 60_000
HOUR = 60 * MINUTE


def _state() -> RequestState:
    # Fresh view, oldest first: 10 viewed, 20 carted, 10 viewed again (the latest).
    return RequestState(
        now_ms=100 * MINUTE,
        items=[10, 20, 10],
        categories=[1, 2, 1],
        behaviors=["pv", "cart", "pv"],
        event_ts=[90 * MINUTE, 95 * MINUTE, 99 * MINUTE],
        history=[HistoryTouch(10, 99 * MINUTE, 2), HistoryTouch(30, 100 * MINUTE - 3 * HOUR, 4)],
        routes={
            "covisit": [40, 20],
            "recent": [10, 20, 30],
            "embedding": [40],
            "trend": [50, 40],
            "popular": [60],
            "request": [],
        },
        covisit_scores={40: 3.0, 20: 1.0},
        candidate_limit=100,
    )


def _row(features: npt.NDArray[np.float32], n: int) -> dict[str, float]:
    return dict(zip(CANDIDATE_FEATURES, features[n].tolist(), strict=True))


def test_every_feature_of_one_request_by_hand() -> None:
    candidates = [40, 20, 10, 30, 50]
    categories = [1, 2, 1, 3, 0]
    item_dense = np.arange(25, dtype=np.float32).reshape(5, 5)
    out = candidate_features(_state(), candidates, categories, item_dense)
    assert out.shape == (5, len(CANDIDATE_FEATURES))
    np.testing.assert_array_equal(out[:, : len(ITEM_DENSE_FEATURES)], item_dense)

    covisited = _row(out, 0)  # 40: recalled by co-visits, never touched, category 1
    assert covisited["fresh_touches"] == 0.0
    assert covisited["fresh_recency"] == 0.0
    assert covisited["category_touches"] == pytest.approx(math.log1p(2))
    assert covisited["same_category_as_last"] == 1.0
    assert covisited["covisit_score"] == pytest.approx(math.log1p(3))
    assert covisited["covisit_rank"] == 1.0
    assert covisited["embedding_rank"] == 1.0
    assert covisited["trend_rank"] == pytest.approx(0.5)
    assert covisited["recent_rank"] == 0.0
    assert covisited["history_rank"] == 0.0
    assert covisited["merge_position"] == 0.0

    carted = _row(out, 1)  # 20: carted 5 minutes before the request
    assert carted["fresh_touches"] == pytest.approx(math.log1p(1))
    assert carted["fresh_intent"] == pytest.approx(math.log1p(1))
    assert carted["fresh_recency"] == pytest.approx(1 / (1 + 5))
    assert carted["is_last_click"] == 0.0
    assert carted["same_category_as_last"] == 0.0
    assert carted["recent_rank"] == pytest.approx(0.5)
    assert carted["covisit_rank"] == pytest.approx(0.5)
    assert carted["merge_position"] == pytest.approx(0.01)

    latest = _row(out, 2)  # 10: viewed twice, the latest event
    assert latest["fresh_touches"] == pytest.approx(math.log1p(2))
    assert latest["fresh_intent"] == 0.0
    assert latest["fresh_recency"] == pytest.approx(1 / (1 + 1))
    assert latest["is_last_click"] == 1.0
    assert latest["history_rank"] == 1.0
    assert latest["history_recency"] == pytest.approx(1 / (1 + 1 / 60))
    assert latest["history_touches"] == pytest.approx(math.log1p(2))

    older = _row(out, 3)  # 30: only in the history, three hours ago
    assert older["fresh_touches"] == 0.0
    assert older["history_rank"] == pytest.approx(0.5)
    assert older["history_recency"] == pytest.approx(1 / (1 + 3))
    assert older["history_touches"] == pytest.approx(math.log1p(4))
    assert older["category_touches"] == 0.0

    unknown = _row(out, 4)  # 50: trend only, category unknown
    assert unknown["category_touches"] == 0.0
    assert unknown["same_category_as_last"] == 0.0
    assert unknown["trend_rank"] == 1.0
    for row in range(5):
        assert _row(out, row)["user_fresh_length"] == pytest.approx(math.log1p(3))
        assert _row(out, row)["user_history_size"] == pytest.approx(math.log1p(2))
        assert _row(out, row)["from_request"] == 0.0


def test_a_cold_request_reads_zeros_not_errors() -> None:
    out = candidate_features(RequestState(now_ms=0), [7], [0], np.zeros((1, 5), np.float32))
    assert out.tolist() == [[0.0] * len(CANDIDATE_FEATURES)]
    empty = candidate_features(RequestState(now_ms=0), [], [], np.zeros((0, 5), np.float32))
    assert empty.shape == (0, len(CANDIDATE_FEATURES))


def test_candidate_input_takes_the_model_category_first() -> None:
    vocab = Vocabulary.build([10, 20], [1, 2])
    known = np.asarray([0, 0, 1, 0], dtype=np.int64)  # item 10 is category 1; 20 unknown
    given = candidate_input(
        _state(), [10, 20, 99], known, [5, 2, 7], np.zeros((3, 5), np.float32), [0.0] * 4, vocab
    )
    assert given.categories == [1, 2, 7]
    assert given.cand_items.tolist() == [2, 3, 1]  # 99 is out of the vocabulary
    assert given.seq_items.tolist() == [2, 3, 2]
    assert given.cand_dense.shape == (3, len(CANDIDATE_FEATURES))
