"""Which fresh rows count and the script calls they become (pure; the Lua runs in the
integration test)."""

from __future__ import annotations

import pytest

from jobs.feature_writer import covisit
from jobs.feature_writer.covisit import (
    CovisitOptions,
    batch_visits,
    count_calls,
    guarded_calls,
    parse_seen,
    plan_counts,
    script_calls,
)
from runtime.online.redis_store import GuardedCalls, Plan
from schemas.features import FeatureUpdate, UserRecentEvents, pack_event
from schemas.online.covisit import Visit, neighbours_key, seen_key
from schemas.online.history import TOUCH_HISTORY, history_keys
from tests.jobs.feature_writer.samples import MINUTE, T0, item_window


def fresh(user_id: int, *items: int) -> UserRecentEvents:
    """A fresh row of ``items`` clicked a minute apart, the last at T0."""
    n = len(items)
    events = [pack_event(T0 - (n - 1 - i) * MINUTE, item, 1, "pv") for i, item in enumerate(items)]
    return UserRecentEvents(user_id=user_id, latest_ts=T0, events=events)


def test_every_fresh_row_is_a_visit_in_changelog_order() -> None:
    broken = UserRecentEvents(user_id=9, latest_ts=T0, events=[f"{T0}:x:1:pv"])
    batch: list[tuple[str, FeatureUpdate]] = [
        ("m1", fresh(1, 10)),
        ("m2", item_window()),
        ("m3", fresh(1, 10, 20)),  # the same user again: not coalesced away
        ("m4", broken),  # the row conversion dead-letters it
        ("m5", fresh(2, 30, 10)),
    ]
    assert batch_visits(batch, window_ms=30 * MINUTE) == [
        (1, Visit(T0, 10, ())),
        (1, Visit(T0, 20, (10,))),
        (2, Visit(T0, 10, (30,))),
    ]


def test_script_call_layout() -> None:
    options = CovisitOptions(project="p", window_ms=1000, neighbours=5, ttl_s=60)
    [call] = script_calls([(1, Visit(T0, 20, (10, 30))), (2, Visit(T0 + 1, 10, ()))], options)
    assert call.script == covisit.COUNT_VISITS
    assert call.keys == [
        b"p:covisit:seen:1", b"p:history:{1}:ts", b"p:history:{1}:n",
        b"p:covisit:20", b"p:covisit:10", b"p:covisit:30",
        b"p:covisit:seen:2", b"p:history:{2}:ts", b"p:history:{2}:n", b"p:covisit:10",
    ]  # fmt: skip
    history = [options.history_items, options.history_ttl_s]
    assert call.argv == [5, 60, 2000, *history, T0, 20, 2, 10, 30, T0 + 1, 10, 0]


def test_script_calls_are_chunked_in_order() -> None:
    visits = [(u, Visit(T0, 1, ())) for u in range(covisit.VISITS_PER_CALL + 1)]
    calls = script_calls(visits, CovisitOptions())
    assert [len(c.keys) // 4 for c in calls] == [covisit.VISITS_PER_CALL, 1]
    assert calls[1].keys[0].endswith(f":seen:{covisit.VISITS_PER_CALL}".encode())


# --- On a Redis Cluster: the guards read first, the counts planned from them ---------


def added(plan: Plan) -> dict[bytes, list[int]]:
    """Set key -> the members each count call adds 1 to."""
    out = {}
    for call in plan.with_rows:
        if call.script != covisit.COUNT_PAIRS:
            continue
        assert call.argv[2] == len(call.argv) - 3  # how many members follow
        out[call.keys[0]] = [int(m) for m in call.argv[3:]]
    return out


def test_a_plan_counts_both_directions_and_moves_each_guard_to_its_newest_visit() -> None:
    options = CovisitOptions(project="p", neighbours=7, ttl_s=60)
    visits = [(1, Visit(100, 11, (12, 13))), (2, Visit(50, 12, (11,))), (1, Visit(200, 14, ()))]
    plan = plan_counts(visits, {1: None, 2: None}, options)
    assert plan.counted == 3
    assert added(plan) == {
        neighbours_key(11, "p"): [12, 13, 12],
        neighbours_key(12, "p"): [11, 11],
        neighbours_key(13, "p"): [11],
    }
    assert all(call.argv[:2] == [7, 60] for call in plan.with_rows if call.script != TOUCH_HISTORY)
    guards = {call.keys[0]: call.argv for call in plan.after_rows}
    assert guards == {
        seen_key(1, "p"): [options.seen_ttl_ms, 200, 14],
        seen_key(2, "p"): [options.seen_ttl_ms, 50, 12],
    }


def test_a_plan_touches_each_user_history_once_per_counted_visit_in_one_call() -> None:
    options = CovisitOptions(project="p", history_items=9, history_ttl_s=30)
    visits = [(1, Visit(100, 11, (12,))), (2, Visit(50, 12, ())), (1, Visit(200, 14, ()))]
    plan = plan_counts(visits, {1: None, 2: (50, 12)}, options)
    touches = {c.keys[0]: c for c in plan.with_rows if c.script == TOUCH_HISTORY}
    assert set(touches) == {history_keys(1, "p")[0]}  # user 2's visit was counted already
    call = touches[history_keys(1, "p")[0]]
    assert call.keys == list(history_keys(1, "p")) and call.header == 2
    assert call.argv == [9, 30, 2, 100, 11, 200, 14]


def test_a_plan_skips_visits_its_guard_already_counted_as_the_script_does() -> None:
    options = CovisitOptions(project="p")
    visits = [
        (1, Visit(100, 11, (12,))),  # older than the guard
        (1, Visit(150, 11, (12,))),  # same time, smaller item: counted already
        (1, Visit(150, 13, (12,))),  # same time, larger item: new
    ]
    plan = plan_counts(visits, {1: (150, 12)}, options)
    assert plan.counted == 1
    assert added(plan) == {neighbours_key(13, "p"): [12], neighbours_key(12, "p"): [13]}
    # All counted already: nothing to send, and the guard stays where it is.
    assert plan_counts(visits[:2], {1: (150, 12)}, options) == Plan([], [], 0)


def test_guarded_calls_read_each_user_guard_once_and_plan_from_what_was_read() -> None:
    options = CovisitOptions(project="p")
    visits = [(1, Visit(100, 11, (12,))), (2, Visit(100, 12, ())), (1, Visit(90, 13, (11,)))]
    guarded = guarded_calls(visits, options)
    assert guarded.guard_keys == [seen_key(1, "p"), seen_key(2, "p")]
    plan = guarded.plan([None, b"100:12"])  # user 2 counted already; user 1's 90 is late
    assert plan.counted == 1
    assert [call.keys[0] for call in plan.after_rows] == [seen_key(1, "p")]


@pytest.mark.parametrize(
    ("stored", "seen"),
    [(None, None), (b"1700000000000:42", (1700000000000, 42)), (b"junk", None), (b"1:", None)],
)
def test_a_guard_that_is_no_guard_guards_nothing(stored: bytes | None, seen: object) -> None:
    assert parse_seen(stored) == seen


def test_count_calls_pick_one_script_per_chunk_on_one_redis_and_guarded_calls_on_a_cluster() -> (
    None
):
    options = CovisitOptions(project="p")
    visits = [(1, Visit(100, 11, (12,)))]
    assert count_calls([], options, cluster=True) == []
    assert isinstance(count_calls(visits, options, cluster=True), GuardedCalls)
    assert count_calls(visits, options, cluster=False) == script_calls(visits, options)
