"""What the user did next, and the ranking metrics, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from jobs.evaluate.truth import Truth, hit_at, ndcg_at, next_items, score
from schemas.records import BehaviorEvent

MIN = 60_000
T = 1_700_000_000_000


def ev(user: int, item: int, minute: float) -> BehaviorEvent:
    return BehaviorEvent(user, item, 1, "pv", T + int(minute * MIN))


def test_next_items_are_the_users_distinct_items_within_the_horizon() -> None:
    prefix = [ev(1, 100, -60)]
    replay = [ev(1, 5, 0), ev(2, 7, 1), ev(1, 6, 10), ev(1, 5, 20), ev(1, 100, 29),
              ev(1, 8, 31), ev(2, 9, 40)]  # fmt: skip
    truths = next_items(prefix, replay, 30 * MIN)
    # After user 1's click at 0: 6, 5 and 100 within 30 min; 8 at 31 min is too late.
    # New to the user: 6 only (5 was the trigger itself, 100 is in the prefix).
    assert truths[0] == Truth(frozenset({6, 5, 100}), frozenset({6}))
    # User 2 at minute 1: item 9 at minute 40 is outside the horizon.
    assert truths[1] == Truth(frozenset(), frozenset())
    # At minute 10: 5, 100 and 8 follow; 8 is the only item never touched before.
    assert truths[2] == Truth(frozenset({5, 100, 8}), frozenset({8}))
    assert truths[6] == Truth(frozenset(), frozenset())


def test_events_at_the_same_time_are_not_what_came_next() -> None:
    replay = [ev(1, 5, 0), ev(1, 6, 0), ev(1, 7, 1)]
    truths = next_items([], replay, 30 * MIN)
    assert truths[0].items == frozenset({7})


def test_hit_and_ndcg_by_hand() -> None:
    truth = frozenset({3, 9})
    assert hit_at([1, 2, 3], truth, 3) == 1.0
    assert hit_at([1, 2, 3], truth, 2) == 0.0
    # Hit at rank 3 (index 2): 1/log2(4) = 0.5; ideal with two true items: 1 + 1/log2(3).
    assert ndcg_at([1, 2, 3], truth, 10) == pytest.approx(0.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at([3, 9], truth, 10) == pytest.approx(1.0)
    assert ndcg_at([1], frozenset(), 10) == 0.0


def test_scores_leave_out_empty_truths_and_count_missing_answers_as_misses() -> None:
    truths = [
        Truth(frozenset({1}), frozenset({1})),
        Truth(frozenset(), frozenset()),
        Truth(frozenset({2}), frozenset()),
        Truth(frozenset({4}), frozenset({4})),
    ]
    answers: list[list[int] | None] = [[1, 5], [7], [2], None]
    any_item = score(answers, truths, 10)
    assert any_item.hit == pytest.approx(2 / 3) and any_item.judged == 3
    new_only = score(answers, truths, 10, new_only=True)
    assert (new_only.hit, new_only.judged) == (0.5, 2)
    assert score([None], [Truth(frozenset(), frozenset())], 10).judged == 0
