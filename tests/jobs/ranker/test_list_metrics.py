import math

import numpy as np
import pytest

from jobs.ranker.list_metrics import judge, judge_fixed, paired_ratio_interval
from jobs.ranker.store_replay import ReplayedRequest
from schemas.candidates import CandidateInput, RequestState
from schemas.recall import Candidate


def _request(items: list[int], truth: set[int], touched: set[int]) -> ReplayedRequest:
    n = len(items)
    given = CandidateInput(
        np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(4, np.float32),
        np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros((n, 24), np.float32), [0] * n,
    )  # fmt: skip
    return ReplayedRequest(
        user=1, ts=0, state=RequestState(now_ms=0),
        candidates=[Candidate(i, "covisit") for i in items], model_input=given,
        truth=frozenset(truth), next_item=None, touched=frozenset(touched), excluded=frozenset(),
    )  # fmt: skip


def test_hit_ndcg_and_new_item_hit_by_hand() -> None:
    items = list(range(1, 13))
    first = _request(items, truth={3, 12}, touched={3})  # 3 is a return, 12 is new
    second = _request(items, truth=set(), touched=set())  # nothing next: not judged
    scores = [[-float(i) for i in items], [0.0] * 12]  # best first: 1, 2, ...
    outcome = judge([first, second], scores, min_new=0)
    assert outcome.hits.tolist() == [1.0]  # 3 is at rank 3; 12 falls off the top 10
    ideal = 1 + 1 / math.log2(3)
    assert outcome.ndcg.tolist() == [pytest.approx((1 / math.log2(4)) / ideal)]
    assert outcome.new_hits.tolist() == [0.0]
    assert outcome.summary()["requests"] == 1.0


def test_the_fixed_answer_and_the_paired_ratio() -> None:
    requests = [_request([1], truth={7}, touched=set()), _request([1], truth={8}, touched={8})]
    fixed = judge_fixed(requests, [7, 9])
    assert fixed.hits.tolist() == [1.0, 0.0]
    assert math.isnan(fixed.new_hits[1])
    ratio, low, high = paired_ratio_interval(np.ones(50), np.r_[np.ones(25), np.zeros(25)])
    assert ratio == 2.0 and low <= 2.0 <= high
