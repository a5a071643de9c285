"""Changelog records for the writer's tests: one of each view, realistic shapes."""

from __future__ import annotations

from schemas.features import (
    CategoryWindow,
    ItemWindow,
    UserRecentEvents,
    UserWindow,
    pack_event,
    pack_trend,
)

T0 = 1_700_000_000_000  # 2023-11-14, epoch ms
MINUTE = 60_000


def recent(
    user_id: int = 7, latest_ts: int = T0, n: int = 3, step_ms: int = MINUTE
) -> UserRecentEvents:
    """``n`` events of a user, the last at ``latest_ts``, ``step_ms`` apart, shuffled order."""
    behaviors = ("pv", "cart", "fav", "buy")
    events = [
        pack_event(latest_ts - i * step_ms, 100 + i, 10 + i % 3, behaviors[i % 4]) for i in range(n)
    ]
    return UserRecentEvents(
        user_id=user_id, latest_ts=latest_ts, events=events[::-1][1::2] + events[::-1][0::2]
    )


def user_window(user_id: int = 7, window_end: int = T0) -> UserWindow:
    events = [
        pack_event(window_end - 3 * MINUTE, 101, 11, "pv"),
        pack_event(window_end - MINUTE, 102, 12, "buy"),
    ]
    return UserWindow(
        user_id=user_id,
        window_start=window_end - 60 * MINUTE,
        window_end=window_end,
        events=events,
        pv=1,
        cart=0,
        fav=0,
        buy=1,
    )


def item_window(item_id: int = 101, window_end: int = T0, pv: int = 4, buy: int = 1) -> ItemWindow:
    return ItemWindow(
        item_id=item_id,
        category_id=11,
        window_start=window_end - 60 * MINUTE,
        window_end=window_end,
        pv=pv,
        cart=2,
        fav=3,
        buy=buy,
    )


def category_window(category_id: int = 11, window_end: int = T0) -> CategoryWindow:
    return CategoryWindow(
        category_id=category_id,
        window_start=window_end - 60 * MINUTE,
        window_end=window_end,
        pv=0,
        cart=1,
        fav=0,
        buy=0,
        top_items=[pack_trend(9, 101), pack_trend(4, 2**53 - 1)],
    )
