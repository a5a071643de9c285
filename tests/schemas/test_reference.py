"""The reference computation on a hand-made event list with hand-computed windows."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from jobs.features.settings import FeatureJobSettings
from schemas import reference
from schemas.features import pack_event, pack_trend
from schemas.records import BehaviorEvent
from schemas.reference import (
    WindowSpec,
    category_windows,
    changed_windows,
    item_windows,
    newest_windows,
    user_recent,
    user_windows,
    window_starts,
)
from tests.jobs.features import oracle

MIN = 60_000
SPEC = WindowSpec(window_ms=30 * MIN, slide_ms=5 * MIN, sequence_length=2, top_items=2)
T = 1_511_654_400_000  # 2017-11-26 00:00:00 UTC, a multiple of 5 minutes

# user 1 views item 10 at 00:01, carts it at 00:07, buys item 11 at 00:33;
# user 2 views item 11 at 00:04.
EVENTS = [
    BehaviorEvent(1, 10, 100, "pv", T + 1 * MIN),
    BehaviorEvent(2, 11, 100, "pv", T + 4 * MIN),
    BehaviorEvent(1, 10, 100, "cart", T + 7 * MIN),
    BehaviorEvent(1, 11, 100, "buy", T + 33 * MIN),
]


def test_window_starts_cover_exactly_the_windows_holding_the_event() -> None:
    starts = window_starts(T + 7 * MIN, SPEC)
    assert starts == [T - 20 * MIN + k * 5 * MIN for k in range(6)]
    assert all(s <= T + 7 * MIN < s + 30 * MIN for s in starts)
    assert window_starts(T, SPEC)[-1] == T  # a window starts exactly at the event


def test_user_windows_by_hand() -> None:
    rows = {(r.user_id, r.window_start): r for r in user_windows(EVENTS, SPEC)}
    # Window [00:05, 00:35) holds user 1's cart (00:07) and buy (00:33), not the view.
    window = rows[(1, T + 5 * MIN)]
    assert (window.pv, window.cart, window.fav, window.buy) == (0, 1, 0, 1)
    assert window.events == [
        pack_event(T + 7 * MIN, 10, 100, "cart"),
        pack_event(T + 33 * MIN, 11, 100, "buy"),
    ]
    # Window [00:00, 00:30) holds the view and the cart.
    assert (rows[(1, T)].pv, rows[(1, T)].cart, rows[(1, T)].buy) == (1, 1, 0)
    # Windows [-00:25, 00:05) .. [00:00, 00:30) hold the 00:01 view: 6 windows, plus
    # [00:05, 00:35) .. [00:30, 01:00) from the later events.
    assert sorted(start for user, start in rows if user == 1) == [
        T + k * 5 * MIN for k in range(-5, 7)
    ]
    # Sequence length 2 keeps the last two of three events.
    assert rows[(1, T + 5 * MIN)].window_end == T + 35 * MIN


def test_changed_windows_are_where_events_enter_or_leave() -> None:
    rows = user_windows(EVENTS, SPEC)
    changed = changed_windows(rows, EVENTS, SPEC)
    # User 1: the view enters (00:05), the cart enters (00:10), the view leaves as the
    # buy enters (00:35), the cart leaves (00:40); the window after the buy leaves is
    # empty, so no row. User 2: one row, where its view enters.
    assert sorted((r.user_id, r.window_end) for r in changed) == [
        (1, T + 5 * MIN), (1, T + 10 * MIN), (1, T + 35 * MIN), (1, T + 40 * MIN),
        (2, T + 5 * MIN),
    ]  # fmt: skip
    held = newest_windows(changed)
    newest = newest_windows(rows)
    # The store holds the newest window's content, with the bounds of the first of its run.
    assert held[(1,)].events == newest[(1,)].events == [pack_event(T + 33 * MIN, 11, 100, "buy")]  # type: ignore[union-attr]
    assert (held[(1,)].window_end, newest[(1,)].window_end) == (T + 40 * MIN, T + 60 * MIN)
    assert held[(2,)].window_end == T + 5 * MIN


def test_item_and_category_windows_by_hand() -> None:
    items = item_windows(EVENTS, SPEC)
    by_key = {(i.item_id, i.window_start): i for i in items}
    assert (by_key[(10, T)].pv, by_key[(10, T)].cart) == (1, 1)
    categories = {c.window_start: c for c in category_windows(items, SPEC)}
    window = categories[T]  # [00:00, 00:30): item 10 pv+cart (score 4), item 11 pv (1)
    assert (window.pv, window.cart, window.buy) == (2, 1, 0)
    assert window.top_items == [pack_trend(4, 10), pack_trend(1, 11)]
    later = categories[T + 5 * MIN]  # item 10 cart (3), item 11 buy (4)
    assert later.top_items == [pack_trend(4, 11), pack_trend(3, 10)]


def test_user_recent_is_the_last_arrivals_per_event() -> None:
    rows = user_recent(EVENTS, SPEC)
    assert [r.user_id for r in rows] == [1, 2, 1, 1]
    assert rows[-1].latest_ts == T + 33 * MIN
    assert rows[-1].events == [
        pack_event(T + 7 * MIN, 10, 100, "cart"),
        pack_event(T + 33 * MIN, 11, 100, "buy"),
    ]


def test_the_reference_agrees_with_the_hand_computed_oracle() -> None:
    items = item_windows(oracle.EVENTS, oracle.SPEC)
    assert sorted_rows(user_windows(oracle.EVENTS, oracle.SPEC)) == sorted_rows(oracle.USER_WINDOWS)
    assert sorted_rows(items) == sorted_rows(oracle.ITEM_WINDOWS)
    assert sorted_rows(category_windows(items, oracle.SPEC)) == sorted_rows(oracle.CATEGORY_WINDOWS)
    assert user_recent(oracle.EVENTS, oracle.SPEC) == oracle.USER_RECENT


def sorted_rows(rows: Iterable[msgspec.Struct]) -> list[bytes]:
    return sorted(msgspec.json.encode(row) for row in rows)


def test_the_default_spec_is_the_feature_jobs_defaults() -> None:
    job = FeatureJobSettings()
    assert (
        reference.WindowSpec(job.window_ms, job.slide_ms, job.sequence_length, job.top_items)
        == reference.DEFAULT_SPEC
    )
