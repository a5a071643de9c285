"""Which fresh rows count and the script calls they become (pure; the Lua runs in the
integration test)."""

from __future__ import annotations

from jobs.feature_writer import covisit
from jobs.feature_writer.covisit import CovisitOptions, batch_visits, script_calls
from schemas.features import FeatureUpdate, UserRecentEvents, pack_event
from schemas.online.covisit import Visit
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
        b"p:covisit:seen:1", b"p:covisit:20", b"p:covisit:10", b"p:covisit:30",
        b"p:covisit:seen:2", b"p:covisit:10",
    ]  # fmt: skip
    assert call.argv == [5, 60, 2000, T0, 20, 2, 10, 30, T0 + 1, 10, 0]


def test_script_calls_are_chunked_in_order() -> None:
    visits = [(u, Visit(T0, 1, ())) for u in range(covisit.VISITS_PER_CALL + 1)]
    calls = script_calls(visits, CovisitOptions())
    assert [len(c.keys) // 2 for c in calls] == [covisit.VISITS_PER_CALL, 1]
    assert calls[1].keys[0].endswith(f":seen:{covisit.VISITS_PER_CALL}".encode())
