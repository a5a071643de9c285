"""The keyed views from the job's Java functions (``udf/``: KeyedFeatures).

Flink SQL's HOP windows fire every window of every key and merge its slices
again each time: on the Taobao stream that was half of the job's CPU, and it wrote
six rows per key and event where the online store keeps one. The window functions
keep the same slices in keyed state, fire keys from an index of due window ends
(not a timer per key), and in the ``changed`` mode write a key's window only where
events enter or leave it, and of those one watermark advance passes only the newest
(``SlicedWindowFunction`` states the guarantee). The fresh view's SQL OVER window
became a keyed function too (``RecentEventsFunction``), and every view writes its
changelog records as bytes (``ChangelogRecord``). SQL has no place for such
operators, so the valid events pass through the DataStream API for them, staying
in the JVM, as the watermark floor does.
"""

from __future__ import annotations

from pyflink.java_gateway import get_gateway
from pyflink.table import StreamTableEnvironment, Table

from jobs.features.settings import FeatureJobSettings
from jobs.features.sql import OPERATOR_EVENTS_QUERY, OPERATOR_TABLES


def register_keyed_views(env: StreamTableEnvironment, settings: FeatureJobSettings) -> None:
    """Register :data:`OPERATOR_TABLES` of the chosen views (the valid events view must exist).

    The functions jar must be on ``pipeline.jars``, as for the watermark floor.
    """
    chosen = [view for view in OPERATOR_TABLES if view in settings.views]
    if not chosen:
        return
    events = env.sql_query(OPERATOR_EVENTS_QUERY)
    features = get_gateway().jvm.io.streamrec.flink.KeyedFeatures.over(
        env._j_tenv, events._j_table, settings.window_ms, settings.slide_ms,
        settings.window_mode == "changed",
    )  # fmt: skip
    builders = {
        "user_recent": lambda: features.recentEvents(
            settings.sequence_length, settings.state_ttl_ms
        ),
        "user_window": lambda: features.userWindows(settings.sequence_length),
        "item_window": features.itemWindows,
        "category_window": lambda: features.categoryWindows(settings.top_items),
    }
    for view in chosen:
        env.create_temporary_view(OPERATOR_TABLES[view], Table(builders[view](), env))
