"""Changelog records to online-store rows (pure): one row per update, newest per key.

Each :data:`~schemas.features.FeatureUpdate` becomes a :class:`FeatureRow`: the
feature view, the entity id, the row time that Feast compares, and the values.

Window rows carry their ``window_end``. The fresh user view is an upsert stream
in changelog order whose consecutive rows can share an event time (two clicks in
the same millisecond, or second in the Taobao data): Feast keeps the first of
equal times, which would hide the second click. Its rows therefore carry the
writer's strictly increasing wall clock in nanoseconds; the event times
themselves are the ``event_ts`` feature.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jobs.feature_writer.sequence_batch import encode_sequences
from schemas.features import (
    TS_DIGITS,
    CategoryWindow,
    FeatureUpdate,
    ItemWindow,
    SequenceEvent,
    UserRecentEvents,
    UserWindow,
    conversion,
    recent_events,
    unpack_events,
    unpack_trends,
)
from schemas.online.feast_format import FeatureRow
from schemas.records import BEHAVIORS
from schemas.views import (
    CATEGORY_TRENDS,
    ITEM_TRENDS,
    USER_CLICK_WINDOW,
    USER_RECENT_CLICKS,
    passthrough_values,
)
from schemas.windows import HORIZON_MS, SEQUENCE_LIMIT

_BEHAVIORS = frozenset(BEHAVIORS)
M = TypeVar("M")


NANOS_PER_MS = 1_000_000


class RowClock:
    """Wall-clock nanoseconds that never repeat or go back within the process."""

    def __init__(self, now_ns: Callable[[], int] = time.time_ns) -> None:
        self._now_ns = now_ns
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self._last = max(self._now_ns(), self._last + 1)
            return self._last


@dataclass(frozen=True)
class ConversionOptions:
    """How the fresh user view cuts a user's recent events, and the clock its rows carry."""

    horizon_ms: int = HORIZON_MS
    limit: int = SEQUENCE_LIMIT
    clock: Callable[[], int] = field(default_factory=RowClock, compare=False)


def update_key(update: FeatureUpdate) -> tuple[str, int, int]:
    """``(feature view, entity id, event time)`` of an update, without converting it."""
    if isinstance(update, UserRecentEvents):
        return USER_RECENT_CLICKS.name, update.user_id, update.latest_ts
    if isinstance(update, UserWindow):
        return USER_CLICK_WINDOW.name, update.user_id, update.window_end
    if isinstance(update, ItemWindow):
        return ITEM_TRENDS.name, update.item_id, update.window_end
    return CATEGORY_TRENDS.name, update.category_id, update.window_end


def coalesce(items: Iterable[tuple[M, FeatureUpdate]]) -> list[tuple[M, FeatureUpdate]]:
    """The newest ``(source, update)`` per (view, entity).

    For windows, among equal times the first wins: the row Feast would end up
    storing from the same batch, as it skips a row whose time is not strictly
    newer. For the fresh view the last in changelog order wins (see the module
    doc). ``source`` rides along (the Kafka message, so a row that fails can be
    dead-lettered).
    """
    newest: dict[tuple[str, int], tuple[int, tuple[M, FeatureUpdate]]] = {}
    for item in items:
        view, entity, ts = update_key(item[1])
        seen = newest.get((view, entity))
        if seen is None or ts > seen[0] or isinstance(item[1], UserRecentEvents):
            newest[view, entity] = (ts, item)
    return [item for _, item in newest.values()]


def to_row(update: FeatureUpdate, options: ConversionOptions) -> FeatureRow:
    """The online-store row of one update."""
    if isinstance(update, UserRecentEvents):
        values = recent_sequence(update, options)
        return FeatureRow(USER_RECENT_CLICKS, update.user_id, options.clock(), values)
    end_ns = update.window_end * NANOS_PER_MS
    if isinstance(update, UserWindow):
        return FeatureRow(USER_CLICK_WINDOW, update.user_id, end_ns, _user_window(update))
    if isinstance(update, ItemWindow):
        return FeatureRow(ITEM_TRENDS, update.item_id, end_ns, _item_window(update))
    return FeatureRow(CATEGORY_TRENDS, update.category_id, end_ns, _category_window(update))


def to_rows(updates: Iterable[FeatureUpdate], options: ConversionOptions) -> list[FeatureRow]:
    """Coalesced rows of a batch of updates, ready to write (raises on a broken update)."""
    rows, failed = convert_batch([(None, update) for update in updates], options)
    if failed:
        raise failed[0][2]
    return rows


def convert_batch(
    items: Sequence[tuple[M, FeatureUpdate]], options: ConversionOptions
) -> tuple[list[FeatureRow], list[tuple[M, FeatureUpdate, ValueError]]]:
    """Rows of the coalesced batch, and the updates that could not be converted.

    Fresh-click updates go through the vectorised encoder together; if any of
    their sequences is unusual, all of them take the per-row reference path.
    """
    rows: list[FeatureRow] = []
    recent: list[tuple[M, UserRecentEvents]] = []
    others: list[tuple[M, FeatureUpdate]] = []
    for source, update in coalesce(items):
        if isinstance(update, UserRecentEvents):
            recent.append((source, update))
        else:
            others.append((source, update))
    encoded = encode_sequences([select_recent(u, options) for _, u in recent]) if recent else []
    if encoded is None:
        others = [*recent, *others]
    else:
        for (_, update), values in zip(recent, encoded, strict=True):
            rows.append(
                FeatureRow(USER_RECENT_CLICKS, update.user_id, options.clock(), None, values)
            )
    failed = []
    for source, update in others:
        try:
            rows.append(to_row(update, options))
        except ValueError as exc:
            failed.append((source, update, exc))
    return rows, failed


def select_recent(update: UserRecentEvents, options: ConversionOptions) -> list[str]:
    """The packed strings :func:`~schemas.features.recent_events` keeps, if all are
    in ``pack_event``'s shape (13-digit time first, so string order is time order)."""
    events = sorted(update.events)
    # First string whose time is > latest_ts - horizon: ";" sorts right after ":".
    start = bisect_left(events, f"{update.latest_ts - options.horizon_ms:0{TS_DIGITS}d};")
    return events[start:][-options.limit :]


def recent_sequence(update: UserRecentEvents, options: ConversionOptions) -> dict[str, Any]:
    """The four arrays of :func:`~schemas.features.recent_events`, computed faster.

    This is the hot path (one row per input event), so it avoids one object per
    event: strings in ``pack_event``'s shape (13-digit time first, so string order
    is time order) are cut by their time prefix, then split all at once. If the
    selected strings are not in that shape, the reference path decides (and
    raises on garbage); strings outside the horizon are not parsed at all.
    """
    selected = select_recent(update, options)
    tokens = ":".join(selected).split(":")
    stamps, behaviors = tokens[0::4], tokens[3::4]
    if (
        len(tokens) != 4 * len(selected)
        or not _BEHAVIORS.issuperset(behaviors)
        or any(len(stamp) != TS_DIGITS for stamp in stamps)
    ):
        return sequence_values(recent_events(update, options.horizon_ms, options.limit))
    return {
        "item_ids": list(map(int, tokens[1::4])),
        "category_ids": list(map(int, tokens[2::4])),
        "behaviors": behaviors,
        "event_ts": list(map(int, stamps)),
    }


def sequence_values(events: Sequence[SequenceEvent]) -> dict[str, Any]:
    return {
        "item_ids": [e.item_id for e in events],
        "category_ids": [e.category_id for e in events],
        "behaviors": [e.behavior for e in events],
        "event_ts": [e.ts for e in events],
    }


def _user_window(update: UserWindow) -> dict[str, Any]:
    values = sequence_values(unpack_events(update.events))
    return values | passthrough_values(USER_CLICK_WINDOW, update)


def _item_window(update: ItemWindow) -> dict[str, Any]:
    values = passthrough_values(ITEM_TRENDS, update)
    return values | {"conversion": conversion(update.pv, update.buy)}


def _category_window(update: CategoryWindow) -> dict[str, Any]:
    trends = unpack_trends(update.top_items)
    return passthrough_values(CATEGORY_TRENDS, update) | {
        "conversion": conversion(update.pv, update.buy),
        "top_item_ids": [item for item, _ in trends],
        "top_item_scores": [score for _, score in trends],
    }
