"""The batch's features straight from Redis in Feast's format: one pipeline per round trip.

Feast's ``get_online_features`` costs tens of milliseconds for many entities;
these reads queue every entity of a micro-batch in one Redis pipeline and decode
the same bytes Feast would (``schemas.online.feast_format``), so they return
exactly what ``get_online_features`` returns (a test proves it). A batch takes
three round trips, each depending on the one before: the users' rows; the trends
of their recent categories with the co-visitation sets of their last clicks
(``schemas.online.covisit``); the candidates' item rows and stock. On a Redis
Cluster each round trip is one pipeline per master, in turn
(``runtime.online.node_pipeline``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from runtime.online.connect import OnlineClient
from runtime.online.node_pipeline import pipeline_for
from runtime.online.redis_store import queue_row_reads
from schemas.candidates import HistoryTouch
from schemas.online.covisit import Neighbours, decode_neighbours, queue_neighbour_reads
from schemas.online.feast_format import decode_timestamp_ns, stored_value
from schemas.online.history import decode_history, queue_history_reads
from schemas.ranking import ZERO_ITEM_DENSE, item_dense_vector, user_dense_vector
from schemas.records import BehaviorEvent
from schemas.views import (
    CATEGORY_TRENDS,
    ITEM_TRENDS,
    USER_CLICK_WINDOW,
    USER_RECENT_CLICKS,
    ViewSpec,
)

Row = dict[str, Any]
TIMESTAMP = "_event_ms"
# Behaviours whose items are not recommended back by default: just bought. Just-viewed
# items stay: re-visits are common, and on the replayed Taobao day leaving them out cut
# hit@10 from 0.28 to 0.11 (make eval-online, docs/evaluation.md).
EXCLUDED_BEHAVIORS = frozenset({"buy"})
# Errors of bytes that are not a stored row of this project (another writer, a corrupted
# value): the row is unreadable, the batch is not.
UNREADABLE_ERRORS = (DecodeError, ValueError, TypeError, OverflowError)
UnreadableHandler = Callable[[str, Exception], None]


def ignore_unreadable(view: str, error: Exception) -> None:
    """The default :data:`UnreadableHandler`: the row just reads as absent."""


def stored_fields(spec: ViewSpec, names: Sequence[str]) -> list[str]:
    """The ``Value`` oneof field each of ``names`` is stored in (pure)."""
    kinds = {feature.name: feature.kind for feature in spec.features}
    return [kinds[name].value for name in names]


def typed_value(raw: bytes | None, field: str) -> Any:
    """``feast_format.decode_value``, for a value stored in ``field``; one in another field
    raises TypeError. A foreign value that parses as another kind would otherwise surface
    later as a crash far from its row. Checking the field, not each element's type, keeps
    a list's check at one comparison."""
    which, value = stored_value(raw)
    if which is not None and which != field:
        raise TypeError(f"a {which} where a {field} belongs")
    return value


def decode_checked(names: Sequence[str], fields: Sequence[str], reply: list[Any]) -> Row | None:
    """One HMGET reply (``names``' values, then the row's time) as a row, None where there
    is no row; raises one of :data:`UNREADABLE_ERRORS` for foreign bytes."""
    ts_ns = decode_timestamp_ns(reply[-1])
    if ts_ns is None:
        return None
    values = zip(names, fields, reply[:-1], strict=True)
    row = {name: typed_value(raw, field) for name, field, raw in values}
    row[TIMESTAMP] = ts_ns // 1_000_000
    return row


class PipelineReads:
    """Queue HMGETs of several views' rows, run them in one pipeline, decode like Feast.

    A row whose bytes do not decode as its view's features reads as absent and is
    reported to ``on_unreadable`` (view name, error): one foreign value must not take
    every request of its user or item down with it.
    """

    def __init__(
        self,
        client: OnlineClient,
        project: str,
        on_unreadable: UnreadableHandler = ignore_unreadable,
    ) -> None:
        self._pipe = pipeline_for(client)
        self._project = project
        self._on_unreadable = on_unreadable
        # Per handle: how many replies it takes, and how they decode.
        self._queued: list[tuple[int, Callable[[list[Any]], list[Any]]]] = []

    def rows(self, spec: ViewSpec, entity_ids: Sequence[int]) -> int:
        """Queue every feature of ``spec`` for ``entity_ids``; returns a handle for results."""
        names = list(spec.feature_names)
        queue_row_reads(self._pipe, spec, entity_ids, names, self._project)
        return self._handle(len(entity_ids), row_decoder(spec, names, self._on_unreadable))

    def smismember(self, key: str, members: Sequence[int]) -> int:
        """Queue a set-membership test: one flag per member."""
        if members:
            self._pipe.smismember(key, list(members))
        else:
            self._pipe.exists(key)  # keeps one reply per queued call
        return self._handle(
            1, lambda replies: [bool(flag) for flag in replies[0]] if members else []
        )

    def neighbours(self, item_ids: Sequence[int], per_item: int) -> int:
        """Queue each item's best ``per_item`` co-visited ``(item, count)``."""
        queue_neighbour_reads(self._pipe, item_ids, per_item, self._project)
        return self._handle(len(item_ids), lambda replies: [decode_neighbours(r) for r in replies])

    def histories(self, user_ids: Sequence[int]) -> int:
        """Queue each user's history (``schemas.online.history``), most recent first."""
        queue_history_reads(self._pipe, user_ids, self._project)
        return self._handle(2 * len(user_ids), _decode_histories)

    def _handle(self, replies: int, decode: Callable[[list[Any]], list[Any]]) -> int:
        self._queued.append((replies, decode))
        return len(self._queued) - 1

    def execute(self) -> list[list[Any]]:
        """Per handle, in queued order: the rows (None where absent, event time in ms
        under ``_event_ms``), the membership flags, or the neighbour lists."""
        replies: list[Any] = self._pipe.execute() if any(n for n, _ in self._queued) else []
        out: list[list[Any]] = []
        at = 0
        for count, decode in self._queued:
            out.append(decode(replies[at : at + count]))
            at += count
        return out


def _decode_histories(replies: list[Any]) -> list[list[HistoryTouch]]:
    return [decode_history(replies[n], replies[n + 1]) for n in range(0, len(replies), 2)]


def row_decoder(
    spec: ViewSpec, names: list[str], on_unreadable: UnreadableHandler
) -> Callable[[list[Any]], list[Row | None]]:
    """Decodes a view's HMGET replies; an unreadable one is None, and reported.

    It holds no reference to the :class:`PipelineReads` that queues it: a closure over
    the reads would make a reference cycle of each batch's reads, its pipeline and its
    replies, which only the cyclic garbage collector frees, in stalls of tens of
    milliseconds (:mod:`inference.worker.heap` says why the request path makes none).
    """

    fields = stored_fields(spec, names)

    def decode(replies: list[Any]) -> list[Row | None]:
        rows: list[Row | None] = []
        for reply in replies:
            try:
                rows.append(decode_checked(names, fields, reply))
            except UNREADABLE_ERRORS as exc:
                on_unreadable(spec.name, exc)
                rows.append(None)
        return rows

    return decode


@dataclass(frozen=True)
class UserFeatures:
    """What the worker knows about one user; empty for unknown users."""

    user_id: int
    items: list[int] = field(default_factory=list)  # recent clicks, oldest first
    categories: list[int] = field(default_factory=list)
    behaviors: list[str] = field(default_factory=list)
    event_ts: list[int] = field(default_factory=list)
    dense: list[float] = field(default_factory=lambda: user_dense_vector(0, 0, 0, 0))
    excluded: frozenset[int] = frozenset()
    features_at: int | None = None
    found_recent: bool = False
    found_window: bool = False


def user_features(
    user_id: int,
    recent: Row | None,
    window: Row | None,
    excluded_behaviors: frozenset[str] = EXCLUDED_BEHAVIORS,
) -> UserFeatures:
    """Combine the fresh view (sequence) and the window view (counts, older purchases) (pure).

    The sequence is the fresh view's when it has events, else the window's.
    """
    source = recent if recent and recent.get("item_ids") else window
    items = list(source.get("item_ids") or []) if source else []
    categories = list(source.get("category_ids") or []) if source else []
    behaviors = list(source.get("behaviors") or []) if source else []
    event_ts = list(source.get("event_ts") or []) if source else []
    dense = user_dense_vector(0, 0, 0, 0)
    if window:
        dense = user_dense_vector(
            *(int(window.get(f"{b}_count") or 0) for b in ("pv", "cart", "fav", "buy"))
        )
    excluded: set[int] = set()
    for row in (recent, window):
        if row:
            pairs = zip(row.get("item_ids") or [], row.get("behaviors") or [], strict=False)
            excluded.update(item for item, b in pairs if b in excluded_behaviors)
    times = [row[TIMESTAMP] for row in (recent, window) if row]
    return UserFeatures(
        user_id=user_id,
        items=items,
        categories=categories[: len(items)],
        behaviors=behaviors[: len(items)],
        event_ts=event_ts[: len(items)],
        dense=dense,
        excluded=frozenset(excluded),
        features_at=max(times) if times else None,
        found_recent=recent is not None,
        found_window=window is not None,
    )


def row_includes(row: Row | None, event: BehaviorEvent) -> bool:
    """Whether a user row's sequence holds ``event``: same item, behaviour and time (pure)."""
    if not row:
        return False
    columns = zip(
        row.get("item_ids") or [], row.get("behaviors") or [], row.get("event_ts") or [],
        strict=False,
    )  # fmt: skip
    return any(
        item == event.item_id and behavior == event.behavior and ts == event.ts
        for item, behavior, ts in columns
    )


def fold_event(
    user: UserFeatures,
    event: BehaviorEvent,
    limit: int,
    excluded_behaviors: frozenset[str] = EXCLUDED_BEHAVIORS,
) -> UserFeatures:
    """``user`` with ``event`` appended as the newest click, the sequence cut to ``limit`` (pure).

    The trigger is the click that just happened, so it goes last. Only the
    sequence and the exclusions change: the window counts stay the store's, and
    so does ``features_at``, which keeps telling how old the store's row was.
    """
    items = [*user.items, event.item_id][-limit:]
    categories = [*user.categories, event.category_id][-limit:]
    behaviors = [*user.behaviors, event.behavior][-limit:]
    event_ts = [*user.event_ts, event.ts][-limit:]
    excluded = user.excluded
    if event.behavior in excluded_behaviors:
        excluded = excluded | {event.item_id}
    return dataclasses.replace(
        user,
        items=items,
        categories=categories,
        behaviors=behaviors,
        event_ts=event_ts,
        excluded=excluded,
    )


@dataclass(frozen=True)
class ItemFeatures:
    dense: list[float]
    category_id: int  # 0 when the item has no trends row
    trend_score: float  # weighted window counts, for the fallback ranking


def item_features(row: Row | None) -> ItemFeatures:
    if row is None:
        return ItemFeatures(ZERO_ITEM_DENSE, 0, 0.0)
    pv, cart, fav, buy = (int(row.get(b) or 0) for b in ("pv", "cart", "fav", "buy"))
    conv = float(row.get("conversion") or 0.0)
    return ItemFeatures(
        item_dense_vector(pv, cart, fav, buy, conv),
        int(row.get("category_id") or 0),
        float(pv + 2 * fav + 3 * cart + 4 * buy),
    )


def top_items(row: Row | None) -> list[int]:
    """A category's trending items, best first."""
    return list(row.get("top_item_ids") or []) if row else []


class FeatureReader:
    """The round trips of a batch (users; routes; items), against one Redis (unreadable rows: see
    :class:`PipelineReads`)."""

    def __init__(
        self,
        client: OnlineClient,
        project: str,
        inventory_key: str,
        on_unreadable: UnreadableHandler = ignore_unreadable,
    ) -> None:
        self.client = client
        self.project = project
        self.inventory_key = inventory_key
        self.on_unreadable = on_unreadable

    def _reads(self) -> PipelineReads:
        return PipelineReads(self.client, self.project, self.on_unreadable)

    def users(self, user_ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        reads = self._reads()
        reads.rows(USER_RECENT_CLICKS, user_ids)
        reads.rows(USER_CLICK_WINDOW, user_ids)
        recent, window = reads.execute()
        return recent, window

    def categories(self, category_ids: Sequence[int]) -> list[Row | None]:
        return self.routes(category_ids, [], 0)[0]

    def routes(
        self, category_ids: Sequence[int], item_ids: Sequence[int], per_item: int
    ) -> tuple[list[Row | None], list[Neighbours]]:
        """What the trend and co-visit routes read, in one round trip (see
        :meth:`routes_and_histories`)."""
        rows, neighbours, _ = self.routes_and_histories(category_ids, item_ids, per_item, ())
        return rows, neighbours

    def routes_and_histories(
        self,
        category_ids: Sequence[int],
        item_ids: Sequence[int],
        per_item: int,
        user_ids: Sequence[int],
    ) -> tuple[list[Row | None], list[Neighbours], list[list[HistoryTouch]]]:
        """What the trend, co-visit and recent routes read, in one round trip: the trend
        rows of ``category_ids``, each of ``item_ids``' best ``per_item`` neighbours (empty
        lists when ``per_item`` is 0) and the histories of ``user_ids``. All need only the
        users' rows, so they need not wait for each other: on a cluster a round trip
        visits every master in turn."""
        reads = self._reads()
        reads.rows(CATEGORY_TRENDS, category_ids)
        neighbours_at = reads.neighbours(item_ids, per_item) if per_item >= 1 else None
        histories_at = reads.histories(user_ids) if user_ids else None
        results = reads.execute()
        neighbours = results[neighbours_at] if neighbours_at else [[] for _ in item_ids]
        histories = results[histories_at] if histories_at else []
        return results[0], neighbours, histories

    def items(
        self, item_ids: Sequence[int], stock_of: Sequence[int] | None = None
    ) -> tuple[list[Row | None], list[bool]]:
        """The trend rows of ``item_ids``, and whether each of ``stock_of`` (default the
        same items) is out of stock, in one round trip."""
        reads = self._reads()
        reads.rows(ITEM_TRENDS, item_ids)
        reads.smismember(self.inventory_key, item_ids if stock_of is None else stock_of)
        rows, out_of_stock = reads.execute()
        return rows, out_of_stock
