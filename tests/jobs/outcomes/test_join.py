"""Hits and misses of recommendations per variant, from records alone (no services)."""

from __future__ import annotations

from jobs.outcomes.join import OutcomeJoin, Verdict
from schemas.records import BehaviorEvent, RecItem, Recommendation

T0 = 1_700_000_000_000
MIN = 60_000


def rec(user: int, items: list[int], at: int, variant: str = "a") -> Recommendation:
    recommended = [RecItem(i, 0.5, "embedding") for i in items]
    return Recommendation(f"r{user}-{at}", user, recommended, "m:1", None, at, variant=variant)


def click(user: int, item: int, at: int, behavior: str = "pv") -> BehaviorEvent:
    return BehaviorEvent(user, item, 1, behavior, at)  # type: ignore[arg-type]


def test_an_act_on_a_recommended_item_within_the_horizon_is_a_hit_counted_once() -> None:
    join = OutcomeJoin(horizon_ms=30 * MIN, lateness_ms=MIN)
    join.recommended(rec(1, [10, 11], T0))
    assert join.event(click(1, 11, T0 + 5 * MIN, "cart")) == [Verdict("a", "", True, "cart")]
    assert join.event(click(1, 10, T0 + 6 * MIN)) == []  # already counted
    assert join.open_count == 0


def test_no_act_is_a_miss_once_event_time_passes_the_horizon() -> None:
    join = OutcomeJoin(horizon_ms=30 * MIN, lateness_ms=MIN)
    join.recommended(rec(1, [10], T0, variant="b"))
    assert join.event(click(2, 10, T0 + 30 * MIN)) == []  # within horizon plus lateness
    assert join.event(click(2, 99, T0 + 31 * MIN + 1)) == [Verdict("b", "", False)]


def test_acts_before_the_answer_or_after_the_horizon_or_by_others_do_not_count() -> None:
    join = OutcomeJoin(horizon_ms=30 * MIN, lateness_ms=MIN)
    join.recommended(rec(1, [10], T0))
    assert join.event(click(1, 10, T0 - 1)) == []  # before the answer
    assert join.event(click(2, 10, T0 + MIN)) == []  # another user
    verdicts = join.event(click(1, 10, T0 + 40 * MIN))  # too late: the horizon closed first
    assert verdicts == [Verdict("a", "", False)]


def test_variants_are_judged_apart() -> None:
    join = OutcomeJoin(horizon_ms=10 * MIN, lateness_ms=0)
    join.recommended(rec(1, [10], T0, "a"))
    join.recommended(rec(2, [20], T0, "b"))
    hits = join.event(click(2, 20, T0 + MIN))
    misses = join.event(click(3, 1, T0 + 11 * MIN))
    assert hits == [Verdict("b", "", True, "pv")] and misses == [Verdict("a", "", False)]


def test_open_recommendations_per_user_are_bounded() -> None:
    join = OutcomeJoin(horizon_ms=30 * MIN, max_open_per_user=2)
    for n in range(3):
        out = join.recommended(rec(1, [10 + n], T0 + n))
    assert out == [Verdict("a", "", False)] and join.evicted["a"] == 1
    assert join.open_count == 2


def test_an_answer_without_items_is_not_judged() -> None:
    join = OutcomeJoin()
    assert join.recommended(rec(1, [], T0)) == [] and join.open_count == 0


def test_an_answer_read_after_the_events_that_answer_it_still_gets_its_hit() -> None:
    join = OutcomeJoin(horizon_ms=30 * MIN, lateness_ms=10 * MIN)
    assert join.event(click(1, 10, T0 + 2 * MIN, "buy")) == []
    assert join.event(click(2, 5, T0 + 5 * MIN)) == []
    assert join.recommended(rec(1, [10], T0)) == [Verdict("a", "", True, "buy")]
    # One whose horizon (plus lateness) the clock has passed is a miss on arrival.
    join.event(click(2, 5, T0 + 50 * MIN))
    assert join.recommended(rec(3, [30], T0)) == [Verdict("a", "", False)]
