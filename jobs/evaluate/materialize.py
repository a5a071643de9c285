"""The training prefix's features as a daily materialization would store them at the cut.

The prefix is computed with the feature job's independent reference
(``schemas.reference``: the same windows, sequences and trends, in plain
Python) and written through the feature writer's own conversion, store writer
and co-visitation counts, so the rows are exactly what the streaming path
would have left. Only windows closed by the cut are kept: a window still open
at the cut had not fired yet. The same materialization seeds both stores; the
streaming one then keeps up with the replay, the batch one stays frozen.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jobs.feature_writer.covisit import CovisitOptions, batch_visits, count_calls
from jobs.feature_writer.rows import ConversionOptions, to_rows
from runtime.online.connect import OnlineClient
from runtime.online.redis_store import OnlineStoreWriter
from schemas.features import FeatureUpdate
from schemas.records import BehaviorEvent
from schemas.reference import (
    DEFAULT_SPEC,
    category_windows,
    item_windows,
    user_recent,
    user_windows,
)
from schemas.windows import HORIZON_MS

SPEC = DEFAULT_SPEC
WRITE_CHUNK = 2000


def prefix_updates(prefix: Sequence[BehaviorEvent], cut_ms: int) -> list[FeatureUpdate]:
    """The changelog the feature job would have emitted for ``prefix`` by ``cut_ms`` (pure).

    Per user and per item only the newest closed window matters to the store, so
    only those are returned; every fresh-view row is (each is one click, which
    the co-visitation counts need).
    """
    items = [w for w in item_windows(prefix, SPEC) if w.window_end <= cut_ms]
    categories = [w for w in category_windows(items, SPEC) if w.window_end <= cut_ms]
    users = [w for w in user_windows(prefix, SPEC) if w.window_end <= cut_ms]
    newest: list[FeatureUpdate] = [
        *_newest(users, lambda w: w.user_id),
        *_newest(items, lambda w: w.item_id),
        *_newest(categories, lambda w: w.category_id),
    ]
    return [*newest, *user_recent(prefix, SPEC)]


def _newest(windows: Iterable[Any], key: Any) -> list[Any]:
    latest: dict[int, Any] = {}
    for window in windows:
        current = latest.get(key(window))
        if current is None or window.window_end > current.window_end:
            latest[key(window)] = window
    return list(latest.values())


def materialize(
    client: OnlineClient, updates: Sequence[FeatureUpdate], projects: Sequence[str]
) -> int:
    """Write ``updates`` (rows and co-visitation counts) into each project; rows written."""
    rows = to_rows(updates, ConversionOptions(horizon_ms=HORIZON_MS))
    written = 0
    for project in projects:
        writer = OnlineStoreWriter(client, project)
        options = CovisitOptions(project=project)
        visits = batch_visits(((None, u) for u in updates), options.window_ms)
        for start in range(0, max(len(rows), len(visits)), WRITE_CHUNK):
            chunk_rows = rows[start : start + WRITE_CHUNK]
            counts = count_calls(
                visits[start : start + WRITE_CHUNK], options, cluster=writer.is_cluster
            )
            written += writer.write(chunk_rows, counts).written
    return written
