"""Changelog records to feature values, and coalescing within a batch."""

from __future__ import annotations

import random

import pytest

from jobs.feature_writer.rows import (
    ConversionOptions,
    RowClock,
    coalesce,
    recent_sequence,
    sequence_values,
    to_row,
    to_rows,
)
from schemas.features import FeatureUpdate, UserRecentEvents, pack_event, recent_events
from tests.jobs.feature_writer.samples import (
    MINUTE,
    T0,
    category_window,
    item_window,
    recent,
    user_window,
)

CLOCK_NS = 1_800_000_000_000_000_000
OPTIONS = ConversionOptions(clock=lambda: CLOCK_NS)
MS = 1_000_000


def test_recent_clicks_row_is_the_sorted_recent_events() -> None:
    update = recent(user_id=7, latest_ts=T0, n=3)
    row = to_row(update, OPTIONS)
    # The fresh view's rows carry the writer's clock, not the event time.
    assert (row.view.name, row.entity_id, row.event_ns) == ("user_recent_clicks", 7, CLOCK_NS)
    assert row.decoded() == {
        "item_ids": [102, 101, 100],
        "category_ids": [12, 11, 10],
        "behaviors": ["fav", "cart", "pv"],
        "event_ts": [T0 - 2 * MINUTE, T0 - MINUTE, T0],
    }


def test_recent_clicks_horizon_and_limit_are_configurable() -> None:
    update = recent(n=10, step_ms=MINUTE)
    row = to_row(update, ConversionOptions(horizon_ms=5 * MINUTE, limit=3))
    assert row.decoded()["event_ts"] == [T0 - 2 * MINUTE, T0 - MINUTE, T0]
    # Exactly horizon old is out, as in schemas.features.recent_events (ts > latest - horizon).
    row = to_row(update, ConversionOptions(horizon_ms=5 * MINUTE, limit=50))
    assert row.decoded()["event_ts"][0] == T0 - 4 * MINUTE


def random_update(rng: random.Random) -> UserRecentEvents:
    latest = T0 + rng.randrange(10**6)
    events = [
        pack_event(
            latest - rng.randrange(0, 3 * 3_600_000, rng.choice([1, 1000, MINUTE])),
            rng.randrange(1, 2**53),
            rng.randrange(1, 10_000),
            rng.choice(["pv", "cart", "fav", "buy"]),
        )
        for _ in range(rng.randrange(0, 120))
    ]
    return UserRecentEvents(user_id=1, latest_ts=latest, events=events)


def test_fast_recent_path_equals_the_reference_on_random_sequences() -> None:
    rng = random.Random(11)
    for _ in range(500):
        update = random_update(rng)
        options = ConversionOptions(
            rng.choice([MINUTE, 30 * MINUTE, 10**9]), rng.choice([1, 5, 50])
        )
        reference = recent_events(update, options.horizon_ms, options.limit)
        assert recent_sequence(update, options) == sequence_values(reference)


@pytest.mark.parametrize(
    "odd",
    [
        f"{T0}:5:6:click",  # behaviour outside the enum: reference path keeps it
        f"{T0 // 10}:5:6:pv",  # 12-digit time without zero padding
    ],
)
def test_unusual_sequences_take_the_reference_path(odd: str) -> None:
    update = UserRecentEvents(user_id=1, latest_ts=T0, events=[pack_event(T0 - 1, 1, 2, "pv"), odd])
    expected = sequence_values(recent_events(update, 10**12, 50))
    assert recent_sequence(update, ConversionOptions(10**12, 50)) == expected


@pytest.mark.parametrize("broken", [f"{T0}:5:pv", f"{T0}:x:6:pv", f"{T0}:5:6:pv:extra"])
def test_broken_sequence_raises_value_error(broken: str) -> None:
    update = UserRecentEvents(user_id=1, latest_ts=T0, events=[broken])
    with pytest.raises(ValueError):
        to_row(update, OPTIONS)


def test_user_window_row() -> None:
    row = to_row(user_window(user_id=3, window_end=T0), OPTIONS)
    assert (row.view.name, row.entity_id, row.event_ns) == ("user_click_window", 3, T0 * MS)
    assert row.decoded() == {
        "item_ids": [101, 102],
        "category_ids": [11, 12],
        "behaviors": ["pv", "buy"],
        "event_ts": [T0 - 3 * MINUTE, T0 - MINUTE],
        "pv_count": 1,
        "cart_count": 0,
        "fav_count": 0,
        "buy_count": 1,
        "window_start": T0 - 60 * MINUTE,
    }


def test_item_trends_row() -> None:
    row = to_row(item_window(item_id=101, pv=4, buy=1), OPTIONS)
    assert (row.view.name, row.entity_id, row.event_ns) == ("item_trends", 101, T0 * MS)
    assert row.decoded() == {
        "category_id": 11,
        "pv": 4,
        "cart": 2,
        "fav": 3,
        "buy": 1,
        "conversion": 0.25,
        "window_start": T0 - 60 * MINUTE,
    }


def test_category_trends_row_unpacks_top_items_best_first() -> None:
    row = to_row(category_window(category_id=11), OPTIONS)
    assert (row.view.name, row.entity_id, row.event_ns) == ("category_trends", 11, T0 * MS)
    assert row.decoded() == {
        "pv": 0,
        "cart": 1,
        "fav": 0,
        "buy": 0,
        "conversion": 0.0,
        "top_item_ids": [101, 2**53 - 1],
        "top_item_scores": [9, 4],
        "window_start": T0 - 60 * MINUTE,
    }


def test_coalesce_keeps_newest_per_view_and_entity() -> None:
    batch: list[tuple[str, FeatureUpdate]] = [
        ("m1", recent(user_id=1, latest_ts=T0)),
        ("m2", recent(user_id=1, latest_ts=T0 + 5)),
        ("m3", recent(user_id=1, latest_ts=T0 + 2)),
        ("m4", user_window(user_id=1, window_end=T0)),  # same user, other view: kept
        ("m5", item_window(item_id=1, window_end=T0)),  # same id, other entity: kept
        ("m6", recent(user_id=2, latest_ts=T0)),
    ]
    # The fresh view is an upsert stream: its last row in changelog order wins.
    assert [source for source, _ in coalesce(batch)] == ["m3", "m4", "m5", "m6"]


def test_coalesce_keeps_the_first_of_equal_window_times_like_feast() -> None:
    first, second = item_window(item_id=1, pv=1), item_window(item_id=1, pv=2)
    assert coalesce([("a", first), ("b", second)]) == [("a", first)]


def test_coalesce_keeps_the_last_fresh_row_even_at_equal_event_times() -> None:
    first, second = recent(user_id=1, n=1), recent(user_id=1, n=2)
    assert first.latest_ts == second.latest_ts
    assert coalesce([("a", first), ("b", second)]) == [("b", second)]


def test_row_clock_never_repeats() -> None:
    clock = RowClock(now_ns=lambda: 5)
    assert [clock(), clock(), clock()] == [5, 6, 7]


def test_to_rows_converts_the_coalesced_batch() -> None:
    rows = to_rows([recent(latest_ts=T0), recent(latest_ts=T0 + 1), item_window()], OPTIONS)
    assert [(r.view.name, r.event_ns) for r in rows] == [
        ("user_recent_clicks", CLOCK_NS),
        ("item_trends", T0 * MS),
    ]
    assert rows[0].decoded()["event_ts"][-1] == T0 + 1  # the newer of the two updates
