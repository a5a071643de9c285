"""Feature rows the streaming jobs publish on ``feature-updates`` (the changelog).

One record per changed feature row, tagged by ``view``. The Flink job emits
them; the Feast writer turns them into online-store rows and the drift job
reads them. Sequences travel packed as strings that sort in time order
(``<ts, 13 digits>:<item>:<category>:<behavior>``) because Flink SQL can sort an
array of strings but not an array of rows; :func:`unpack_events` undoes it.
"""

from __future__ import annotations

import typing
from typing import Annotated

import msgspec
from msgspec import Meta

from schemas.records import Behavior, CategoryId, EpochMillis, ItemId, UserId


def stored(online_name: str | None = None) -> Meta:
    """Marks a changelog field the writer stores as an online feature, as it is.

    The online views (:mod:`schemas.views`) take these fields from the rows'
    annotations, so a new pass-through feature is one annotated field here
    plus its computation in the feature job. ``online_name`` renames it in the
    store (the user window's counts are ``pv_count``, ...).
    """
    return Meta(extra={"online": online_name or True})


Count = Annotated[int, Meta(ge=0)]
TS_DIGITS = 13
SCORE_DIGITS = 10
ITEM_DIGITS = 16


class SequenceEvent(msgspec.Struct, frozen=True, array_like=True):
    """One click of a sequence, unpacked."""

    ts: int
    item_id: int
    category_id: int
    behavior: str


class UserRecentEvents(msgspec.Struct, frozen=True, tag_field="view", tag="user_recent"):
    """A user's latest events, emitted on every event (freshness within a second).

    ``events`` holds the last arrivals, packed and sorted; the horizon cut to the
    last 30 minutes before ``latest_ts`` is applied by :func:`recent_events`.
    """

    user_id: UserId
    latest_ts: EpochMillis
    events: list[str]


class UserWindow(msgspec.Struct, frozen=True, tag_field="view", tag="user_window"):
    """A user's exact event-time window: last N events in time order, counts by behaviour."""

    user_id: UserId
    window_start: Annotated[EpochMillis, stored()]
    window_end: EpochMillis
    events: list[str]
    pv: Annotated[Count, stored("pv_count")]
    cart: Annotated[Count, stored("cart_count")]
    fav: Annotated[Count, stored("fav_count")]
    buy: Annotated[Count, stored("buy_count")]


class ItemWindow(msgspec.Struct, frozen=True, tag_field="view", tag="item_window"):
    """An item's counts by behaviour in one event-time window."""

    item_id: ItemId
    category_id: Annotated[CategoryId, stored()]
    window_start: Annotated[EpochMillis, stored()]
    window_end: EpochMillis
    pv: Annotated[Count, stored()]
    cart: Annotated[Count, stored()]
    fav: Annotated[Count, stored()]
    buy: Annotated[Count, stored()]


class CategoryWindow(msgspec.Struct, frozen=True, tag_field="view", tag="category_window"):
    """A category's window counts and its top trending items (packed ``score:item``)."""

    category_id: CategoryId
    window_start: Annotated[EpochMillis, stored()]
    window_end: EpochMillis
    pv: Annotated[Count, stored()]
    cart: Annotated[Count, stored()]
    fav: Annotated[Count, stored()]
    buy: Annotated[Count, stored()]
    top_items: list[str]


FeatureUpdate = UserRecentEvents | UserWindow | ItemWindow | CategoryWindow
VIEW_TAGS: tuple[str, ...] = tuple(
    str(row.__struct_config__.tag) for row in typing.get_args(FeatureUpdate)
)

# Trending score of an item in a window: stronger intent weighs more.
TREND_WEIGHTS: dict[Behavior, int] = {"pv": 1, "fav": 2, "cart": 3, "buy": 4}


def view_of(update: FeatureUpdate) -> str:
    """The ``view`` tag an update carries on the changelog."""
    tag: str = type(update).__struct_config__.tag  # type: ignore[assignment]
    return tag


def pack_event(ts: int, item_id: int, category_id: int, behavior: str) -> str:
    return f"{ts:0{TS_DIGITS}d}:{item_id}:{category_id}:{behavior}"


def unpack_events(packed: list[str]) -> list[SequenceEvent]:
    events = []
    for text in packed:
        ts, item, category, behavior = text.split(":")
        events.append(SequenceEvent(int(ts), int(item), int(category), behavior))
    return events


def recent_events(update: UserRecentEvents, horizon_ms: int, limit: int) -> list[SequenceEvent]:
    """The last ``limit`` events no older than ``horizon_ms`` before the user's latest event."""
    oldest = update.latest_ts - horizon_ms
    events = [e for e in unpack_events(sorted(update.events)) if e.ts > oldest]
    return events[-limit:]


def pack_trend(score: int, item_id: int) -> str:
    return f"{score:0{SCORE_DIGITS}d}:{item_id:0{ITEM_DIGITS}d}"


def unpack_trends(packed: list[str]) -> list[tuple[int, int]]:
    """``(item_id, score)`` pairs, best first."""
    pairs = []
    for text in packed:
        score, item = text.split(":")
        pairs.append((int(item), int(score)))
    return pairs


def conversion(pv: int, buy: int) -> float:
    """Purchases per view in the window; 0 when nothing was viewed."""
    return buy / pv if pv else 0.0
