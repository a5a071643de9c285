"""The batch's features straight from Redis in Feast's format: one pipeline per round trip.

Feast's ``get_online_features`` costs tens of milliseconds for many entities;
these reads queue every entity of a micro-batch in one Redis pipeline and decode
the same bytes Feast would (``schemas.online.feast_format``), so they return
exactly what ``get_online_features`` returns (a test proves it). A batch takes
three round trips, each depending on the one before: the users' rows; the trends
of their recent categories; the candidates' item rows and stock. A fourth, beside
the trends, reads the co-visitation sets of the users' last clicks
(``schemas.online.covisit``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from schemas.online.covisit import Neighbours, read_neighbours
from schemas.online.redis_store import decode_reply, queue_row_reads
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
# hit@10 from 0.28 to 0.11 (make eval-online, tests/benchmarks/README.md).
EXCLUDED_BEHAVIORS = frozenset({"buy"})


class PipelineReads:
    """Queue HMGETs of several views' rows, run them in one pipeline, decode like Feast."""

    def __init__(self, client: redis.Redis, project: str) -> None:
        self._pipe = client.pipeline(transaction=False)
        self._project = project
        self._queued: list[tuple[ViewSpec, list[str], int]] = []

    def rows(self, spec: ViewSpec, entity_ids: Sequence[int]) -> int:
        """Queue every feature of ``spec`` for ``entity_ids``; returns a handle for results."""
        names = list(spec.feature_names)
        queue_row_reads(self._pipe, spec, entity_ids, names, self._project)
        self._queued.append((spec, names, len(entity_ids)))
        return len(self._queued) - 1

    def smismember(self, key: str, members: Sequence[int]) -> int:
        """Queue a set-membership test; its result comes after every view's rows."""
        if members:
            self._pipe.smismember(key, list(members))
        else:
            self._pipe.exists(key)  # keeps one reply per queued call
        self._queued.append((ITEM_TRENDS, [], -len(members) - 1))
        return len(self._queued) - 1

    def execute(self) -> list[list[Any]]:
        """Per handle: the rows (None where absent, event time in ms under ``_event_ms``),
        or the membership flags."""
        replies: list[Any] = self._pipe.execute()
        out: list[list[Any]] = []
        at = 0
        for spec, names, count in self._queued:
            if count < 0:  # a membership test
                members = -count - 1
                reply = replies[at]
                out.append([bool(flag) for flag in reply] if members else [])
                at += 1
                continue
            batch = replies[at : at + count]
            out.append([decode_reply(spec, names, reply, TIMESTAMP) for reply in batch])
            at += count
        return out


@dataclass(frozen=True)
class UserFeatures:
    """What the worker knows about one user; empty for unknown users."""

    user_id: int
    items: list[int] = field(default_factory=list)  # recent clicks, oldest first
    categories: list[int] = field(default_factory=list)
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
    excluded = user.excluded
    if event.behavior in excluded_behaviors:
        excluded = excluded | {event.item_id}
    return dataclasses.replace(user, items=items, categories=categories, excluded=excluded)


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
    """The three round trips of a batch, against one Redis."""

    def __init__(self, client: redis.Redis, project: str, inventory_key: str) -> None:
        self.client = client
        self.project = project
        self.inventory_key = inventory_key

    def users(self, user_ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        reads = PipelineReads(self.client, self.project)
        reads.rows(USER_RECENT_CLICKS, user_ids)
        reads.rows(USER_CLICK_WINDOW, user_ids)
        recent, window = reads.execute()
        return recent, window

    def categories(self, category_ids: Sequence[int]) -> list[Row | None]:
        if not category_ids:
            return []
        reads = PipelineReads(self.client, self.project)
        reads.rows(CATEGORY_TRENDS, category_ids)
        return reads.execute()[0]

    def items(
        self, item_ids: Sequence[int], stock_of: Sequence[int] | None = None
    ) -> tuple[list[Row | None], list[bool]]:
        """The trend rows of ``item_ids``, and whether each of ``stock_of`` (default the
        same items) is out of stock, in one round trip."""
        reads = PipelineReads(self.client, self.project)
        reads.rows(ITEM_TRENDS, item_ids)
        reads.smismember(self.inventory_key, item_ids if stock_of is None else stock_of)
        rows, out_of_stock = reads.execute()
        return rows, out_of_stock

    def neighbours(self, item_ids: Sequence[int], per_item: int) -> list[Neighbours]:
        """Each item's best ``per_item`` co-visited ``(item, count)``, empty where none."""
        return read_neighbours(self.client, item_ids, per_item, self.project)
