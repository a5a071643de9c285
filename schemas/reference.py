"""The feature job's output computed in plain Python, independently of Flink.

The executable form of the changelog contract (:mod:`schemas.features`): tests compare
the job's changelog with this, row for row, and the stages that need the rows without
running Flink build them here (the drift job's reference distribution, the online
evaluation's materialized prefix). It follows the
definitions, not the SQL: HOP windows aligned to the epoch, a user's last N
events sorted by their packed form (time first), counts per behaviour, item
trend scores, and the fresh view as the last N arrivals of each user.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from schemas.features import (
    TREND_WEIGHTS,
    CategoryWindow,
    ItemWindow,
    UserRecentEvents,
    UserWindow,
    pack_event,
    pack_trend,
)
from schemas.records import BehaviorEvent
from schemas.windows import SEQUENCE_LIMIT, SLIDE_MS, TOP_ITEMS, WINDOW_MS


@dataclass(frozen=True)
class WindowSpec:
    window_ms: int
    slide_ms: int
    sequence_length: int
    top_items: int


# The windows the feature job computes unless its flags say otherwise (schemas.windows).
DEFAULT_SPEC = WindowSpec(WINDOW_MS, SLIDE_MS, SEQUENCE_LIMIT, TOP_ITEMS)


def window_starts(ts: int, spec: WindowSpec) -> list[int]:
    """Starts of every HOP window holding ``ts`` (start <= ts < start + window)."""
    last = ts - ts % spec.slide_ms
    count = spec.window_ms // spec.slide_ms
    return [last - k * spec.slide_ms for k in range(count)][::-1]


def _counts(events: Iterable[BehaviorEvent]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(TREND_WEIGHTS, 0)
    for event in events:
        counts[event.behavior] += 1
    return counts


def user_windows(events: Iterable[BehaviorEvent], spec: WindowSpec) -> list[UserWindow]:
    groups: dict[tuple[int, int], list[BehaviorEvent]] = defaultdict(list)
    for event in events:
        for start in window_starts(event.ts, spec):
            groups[(event.user_id, start)].append(event)
    return [
        UserWindow(
            user_id=user,
            window_start=start,
            window_end=start + spec.window_ms,
            events=sorted(_packed(e) for e in members)[-spec.sequence_length :],
            **_counts(members),
        )
        for (user, start), members in groups.items()
    ]


def item_windows(events: Iterable[BehaviorEvent], spec: WindowSpec) -> list[ItemWindow]:
    groups: dict[tuple[int, int, int], list[BehaviorEvent]] = defaultdict(list)
    for event in events:
        for start in window_starts(event.ts, spec):
            groups[(event.item_id, event.category_id, start)].append(event)
    return [
        ItemWindow(
            item_id=item,
            category_id=category,
            window_start=start,
            window_end=start + spec.window_ms,
            **_counts(members),
        )
        for (item, category, start), members in groups.items()
    ]


def trend_score(item: ItemWindow) -> int:
    return sum(weight * getattr(item, name) for name, weight in TREND_WEIGHTS.items())


def category_windows(items: Iterable[ItemWindow], spec: WindowSpec) -> list[CategoryWindow]:
    groups: dict[tuple[int, int], list[ItemWindow]] = defaultdict(list)
    for item in items:
        groups[(item.category_id, item.window_start)].append(item)
    rows = []
    for (category, start), members in groups.items():
        trends = sorted((pack_trend(trend_score(m), m.item_id) for m in members), reverse=True)
        rows.append(
            CategoryWindow(
                category_id=category,
                window_start=start,
                window_end=start + spec.window_ms,
                top_items=trends[: spec.top_items],
                **{name: sum(getattr(m, name) for m in members) for name in TREND_WEIGHTS},
            )
        )
    return rows


def user_recent(events: Iterable[BehaviorEvent], spec: WindowSpec) -> list[UserRecentEvents]:
    """One row per event, in arrival order: the user's last N arrivals, sorted."""
    recent: dict[int, deque[BehaviorEvent]] = defaultdict(
        lambda: deque(maxlen=spec.sequence_length)
    )
    rows = []
    for event in events:
        window = recent[event.user_id]
        window.append(event)
        rows.append(
            UserRecentEvents(
                user_id=event.user_id,
                latest_ts=max(e.ts for e in window),
                events=sorted(_packed(e) for e in window),
            )
        )
    return rows


def _packed(event: BehaviorEvent) -> str:
    return pack_event(event.ts, event.item_id, event.category_id, event.behavior)


WindowRow = UserWindow | ItemWindow | CategoryWindow


def window_key(row: WindowRow) -> tuple[int, ...]:
    """The online store's key of a window row (an item's windows are per category too)."""
    if isinstance(row, UserWindow):
        return (row.user_id,)
    if isinstance(row, ItemWindow):
        return (row.item_id, row.category_id)
    return (row.category_id,)


def newest_windows(rows: Iterable[WindowRow]) -> dict[tuple[int, ...], WindowRow]:
    """The newest window of each key: what the online store holds once ``rows`` are written."""
    newest: dict[tuple[int, ...], WindowRow] = {}
    for row in rows:
        key = window_key(row)
        if key not in newest or row.window_end > newest[key].window_end:
            newest[key] = row
    return newest


W = TypeVar("W", UserWindow, ItemWindow, CategoryWindow)


def changed_windows(
    rows: Iterable[W], events: Iterable[BehaviorEvent], spec: WindowSpec
) -> list[W]:
    """The rows the ``changed`` window mode may write: the windows that events of their
    key enter (the window ending where the event's slide ends) or leave (a window
    length later); between two such points a key's windows hold the same events.

    The newest of them per key (:func:`newest_windows`) is what the online store holds
    in that mode: the newest window's content, with the bounds of the window where it
    last changed.
    """
    points: set[tuple[tuple[object, ...], int]] = set()
    for event in events:
        slice_end = event.ts // spec.slide_ms * spec.slide_ms + spec.slide_ms
        for key in _event_keys(event):
            points.add((key, slice_end))
            points.add((key, slice_end + spec.window_ms))
    return [row for row in rows if _change_point(row) in points]


def _change_point(row: WindowRow) -> tuple[tuple[object, ...], int]:
    return (type(row), *window_key(row)), row.window_end


def _event_keys(event: BehaviorEvent) -> tuple[tuple[object, ...], ...]:
    """The keys of the windows an event belongs to, tagged with their row type."""
    return (
        (UserWindow, event.user_id),
        (ItemWindow, event.item_id, event.category_id),
        (CategoryWindow, event.category_id),
    )
