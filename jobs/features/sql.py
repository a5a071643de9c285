"""The feature job as Flink SQL, generated from its settings (pure: strings in, strings out).

Everything runs in the JVM: parsing and validating the JSON, routing bad and
late events to the dead-letter topic, the event-time HOP windows, the fresh
per-event view and the Kafka sinks. No record crosses into Python, which is
what keeps the job near SQL speed (see the benchmark in tests/benchmarks).

Parsing and validation run in two small Java functions (``jobs/features/udf``)
that mirror :mod:`schemas.codec` rule for rule (size, JSON, object, each
field's type and range, clock skew), so a record is refused with the same
``error_kind`` by Python consumers and by this job. (The same checks written
with Flink's JSON_QUERY functions parse each document eight times and ran at
about 10k events/s here.)
"""

from __future__ import annotations

import typing
from typing import Any

from jobs.features.dead_letter_sql import dead_letter_insert, sink_options
from jobs.features.settings import FeatureJobSettings
from jobs.features.sql_quote import identifier, with_options
from schemas.features import (
    ITEM_DIGITS,
    SCORE_DIGITS,
    TREND_WEIGHTS,
    CategoryWindow,
    FeatureUpdate,
    ItemWindow,
    UserRecentEvents,
    UserWindow,
)
from schemas.records import BEHAVIORS as _BEHAVIORS

FUNCTIONS = {
    "PARSE_BEHAVIOR_EVENT": "io.streamrec.flink.ParseBehaviorEvent",
    "EVENT_TIME": "io.streamrec.flink.EventTime",
}


# The source's events as the job's views read them: the columns of EVENT_COLUMNS,
# the rowtime attribute and a proctime column.
EVENTS_VIEW = "behavior_events"
EVENT_COLUMNS = ("msg_key", "body", "src_topic", "src_partition", "src_offset", "rowtime")


def function_ddl() -> list[str]:
    return [
        f"CREATE TEMPORARY FUNCTION {name} AS '{java_class}' LANGUAGE JAVA"
        for name, java_class in FUNCTIONS.items()
    ]


def _limits(settings: FeatureJobSettings) -> str:
    return f"{settings.max_event_bytes}, CAST({settings.max_future_skew_ms} AS BIGINT)"


def interval(ms: int) -> str:
    """A day-time interval literal with millisecond precision (the only form Flink takes)."""
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    literal = f"{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"
    return f"INTERVAL '{literal}' DAY TO SECOND(3)"


def kafka_options(settings: FeatureJobSettings, topic: str) -> dict[str, str]:
    options = {
        "connector": "kafka",
        "topic": topic,
        "properties.bootstrap.servers": settings.bootstrap_servers,
    }
    # The connector is the Java client: librdkafka names translated, Java-only ones over them.
    options.update({f"properties.{k}": v for k, v in settings.connector_properties().items()})
    return options


def source_ddl(settings: FeatureJobSettings) -> str:
    options = kafka_options(settings, settings.source_topic) | {
        "properties.group.id": settings.group_id,
        "properties.auto.offset.reset": "earliest",
        "scan.startup.mode": "earliest-offset" if settings.from_earliest else "group-offsets",
        "scan.watermark.idle-timeout": f"{settings.idle_timeout_ms} ms",
        "key.format": "raw",
        "key.fields": "msg_key",
        "value.format": "raw",
        "value.fields-include": "EXCEPT_KEY",
    }
    if settings.bounded:
        options["scan.bounded.mode"] = "latest-offset"
    # Implausible times must not reach the watermark: one event stamped 2099
    # would make every later event late. They get epoch 0 and go to the DLQ.
    return f"""CREATE TEMPORARY TABLE behavior_source (
  msg_key BYTES,
  body BYTES,
  src_topic STRING METADATA FROM 'topic' VIRTUAL,
  src_partition INT METADATA FROM 'partition' VIRTUAL,
  src_offset BIGINT METADATA FROM 'offset' VIRTUAL,
  proctime AS PROCTIME(),
  rowtime AS TO_TIMESTAMP_LTZ(EVENT_TIME(body, {_limits(settings)}), 3),
  WATERMARK FOR rowtime AS rowtime - {interval(settings.out_of_orderness_ms)}
) WITH (
  {with_options(options)}
)"""


def classified_view(settings: FeatureJobSettings) -> str:
    """Every event with ``error_kind``/``error`` attached (NULL when it is good).

    An event behind the current watermark is *late*: the windows it belongs to may
    already have fired, so it is dead-lettered rather than silently dropped.
    """
    late = "e.error_kind IS NULL AND rowtime <= CURRENT_WATERMARK(rowtime)"
    return f"""CREATE TEMPORARY VIEW behavior_classified AS
SELECT msg_key, body, src_topic, src_partition, src_offset, rowtime, proctime,
  e.user_id AS user_id, e.item_id AS item_id, e.category_id AS category_id,
  e.behavior AS behavior, e.ts AS ts, e.packed AS packed,
  CASE WHEN {late} THEN 'late' ELSE e.error_kind END AS error_kind,
  CASE WHEN {late} THEN 'late: event time ' || CAST(e.ts AS STRING)
      || ' is behind the watermark ' || CAST(CURRENT_WATERMARK(rowtime) AS STRING)
      || ' (allowed out-of-orderness {settings.out_of_orderness_ms} ms)'
    ELSE e.error END AS error
FROM (
  SELECT *, PARSE_BEHAVIOR_EVENT(body, {_limits(settings)}) AS e FROM {EVENTS_VIEW}
)"""


def dead_letter_ddl(settings: FeatureJobSettings) -> str:
    options = kafka_options(settings, settings.dead_letter_topic) | sink_options(settings)
    return f"""CREATE TEMPORARY TABLE dead_letter_sink (
  msg_key BYTES,
  envelope STRING
) WITH (
  {with_options(options)}
)"""


def valid_view() -> str:
    # ``packed`` (schemas.features.pack_event's form, the time padded to TS_DIGITS) comes
    # from the parser: in SQL it was a cast, a pad and six concatenations per event.
    return """CREATE TEMPORARY VIEW behavior_valid AS
SELECT user_id, item_id, category_id, behavior, ts, rowtime, proctime, packed
FROM behavior_classified
WHERE error_kind IS NULL"""


# The changelog carries about ten rows per event: batch and compress them.
CHANGELOG_PRODUCER = {
    "properties.linger.ms": "20",
    "properties.batch.size": "524288",
    "properties.compression.type": "lz4",
}


def changelog_options(settings: FeatureJobSettings, value_format: str) -> dict[str, str]:
    """A Kafka sink on the changelog topic, keyed by ``changelog_key``; every view writes there."""
    return (
        kafka_options(settings, settings.changelog_topic)
        | CHANGELOG_PRODUCER
        | {
            "key.format": "raw",
            "key.fields": "changelog_key",
            "value.format": value_format,
            "value.fields-include": "EXCEPT_KEY",
            "sink.delivery-guarantee": "at-least-once",
        }
    )


def changelog_ddl(settings: FeatureJobSettings, table: str, columns: str) -> str:
    """A view's changelog sink for rows the JSON format writes."""
    options = changelog_options(settings, "json")
    return f"""CREATE TEMPORARY TABLE {identifier(table)} (
  changelog_key STRING,
  `view` STRING,
  {columns}
) WITH (
  {with_options(options)}
)"""


# Flink SQL type of each changelog field's Python type (msgspec annotations stripped).
_SQL_TYPES: dict[Any, str] = {
    int: "BIGINT",
    float: "DOUBLE",
    str: "STRING",
    list[str]: "ARRAY<STRING>",
}


def sink_columns(row: type[FeatureUpdate]) -> str:
    """The sink table's columns for a changelog row type, in field order.

    Derived from :mod:`schemas.features`, so the JSON the job writes always has
    the fields the changelog decoder expects; the INSERTs select in this order.
    """
    hints = typing.get_type_hints(row)
    return ", ".join(f"{name} {_SQL_TYPES[hints[name]]}" for name in row.__struct_fields__)


SINK_ROWS: dict[str, type[FeatureUpdate]] = {
    "user_recent_sink": UserRecentEvents,
    "user_window_sink": UserWindow,
    "item_window_sink": ItemWindow,
    "category_window_sink": CategoryWindow,
}


def behavior_counts(prefix: str = "") -> str:
    return ", ".join(
        f"SUM(CASE WHEN behavior = '{b}' THEN 1 ELSE 0 END) AS {prefix}{b}" for b in _BEHAVIORS
    )


def epoch_ms(column: str) -> str:
    # window_start/end are TIMESTAMP(3) in the session zone (UTC); whole seconds
    # plus the millisecond part keeps sub-second slides exact.
    return (
        f"(CAST(TIMESTAMPDIFF(SECOND, TIMESTAMP '1970-01-01 00:00:00', {column}) AS BIGINT) * 1000 "
        f"+ EXTRACT(MILLISECOND FROM {column}))"
    )


def hop(settings: FeatureJobSettings) -> str:
    return (
        f"TABLE(HOP(TABLE behavior_valid, DESCRIPTOR(rowtime), "
        f"{interval(settings.slide_ms)}, {interval(settings.window_ms)}))"
    )


def user_recent_insert(settings: FeatureJobSettings) -> str:
    """Per event, the user's last N arrivals, sorted by time: fresh within a second.

    A processing-time OVER window emits as each event arrives, without waiting
    for the watermark; the 30-minute horizon is cut against ``latest_ts`` when
    the row is written (schemas.features.recent_events).
    """
    preceding = settings.sequence_length - 1
    return f"""INSERT INTO user_recent_sink
SELECT 'user_recent:' || CAST(user_id AS STRING), 'user_recent', user_id, latest_ts,
  ARRAY_SORT(events)
FROM (
  SELECT user_id, MAX(ts) OVER w AS latest_ts, ARRAY_AGG(packed) OVER w AS events
  FROM behavior_valid
  WINDOW w AS (PARTITION BY user_id ORDER BY proctime
               ROWS BETWEEN {preceding} PRECEDING AND CURRENT ROW)
)"""


def user_window_insert(settings: FeatureJobSettings) -> str:
    """Exact event-time windows: the last N events in time order and counts by behaviour."""
    return f"""INSERT INTO user_window_sink
SELECT 'user_window:' || CAST(user_id AS STRING), 'user_window', user_id,
  {epoch_ms("window_start")}, {epoch_ms("window_end")},
  ARRAY_SLICE(ARRAY_SORT(ARRAY_AGG(packed)), -{settings.sequence_length}),
  {behavior_counts()}
FROM {hop(settings)}
GROUP BY user_id, window_start, window_end"""


def item_window_view(settings: FeatureJobSettings) -> str:
    weights = " + ".join(f"{TREND_WEIGHTS[b]} * {b}" for b in _BEHAVIORS)
    return f"""CREATE TEMPORARY VIEW item_windows AS
SELECT item_id, category_id, w_start, w_end, window_time, pv, cart, fav, buy,
  {weights} AS score
FROM (
  SELECT item_id, category_id, window_start AS w_start, window_end AS w_end, window_time,
    {behavior_counts()}
  FROM {hop(settings)}
  GROUP BY item_id, category_id, window_start, window_end, window_time
)"""


def item_window_insert() -> str:
    return f"""INSERT INTO item_window_sink
SELECT 'item_window:' || CAST(item_id AS STRING), 'item_window', item_id, category_id,
  {epoch_ms("w_start")}, {epoch_ms("w_end")}, pv, cart, fav, buy
FROM item_windows"""


def category_window_insert(settings: FeatureJobSettings) -> str:
    """Category counts and top items, from the item windows of the same HOP window.

    A TUMBLE of one slide over the item windows' ``window_time`` (their end minus
    1 ms) groups exactly the item rows of one HOP window.
    """
    packed = (
        f"LPAD(CAST(score AS STRING), {SCORE_DIGITS}, '0') || ':' "
        f"|| LPAD(CAST(item_id AS STRING), {ITEM_DIGITS}, '0')"
    )
    return f"""INSERT INTO category_window_sink
SELECT 'category_window:' || CAST(category_id AS STRING), 'category_window', category_id,
  {epoch_ms("window_end")} - {settings.window_ms}, {epoch_ms("window_end")},
  SUM(pv), SUM(cart), SUM(fav), SUM(buy),
  ARRAY_SLICE(ARRAY_SORT(ARRAY_AGG({packed}), FALSE), 1, {settings.top_items})
FROM TABLE(TUMBLE(TABLE item_windows, DESCRIPTOR(window_time), {interval(settings.slide_ms)}))
GROUP BY category_id, window_start, window_end"""


# The views' tables when the keyed functions compute them (jobs/features/keyed.py):
# changelog records already written as key and value bytes (io.streamrec.flink.ChangelogRecord).
OPERATOR_TABLES = {
    "user_recent": "user_recent_records",
    "user_window": "user_window_records",
    "item_window": "item_window_records",
    "category_window": "category_window_records",
}
# What the operator reads: io.streamrec.flink.KeyedFeatures.EVENT_FIELDS, then the
# rowtime attribute, whose watermarks close its windows.
OPERATOR_EVENTS_QUERY = (
    "SELECT user_id, item_id, category_id, behavior, ts, packed, rowtime FROM behavior_valid"
)


def record_sink(view: str) -> str:
    # One sink table per view, so each chains to its operator (no exchange on the way out).
    return f"{view}_record_sink"


def raw_changelog_ddl(settings: FeatureJobSettings, table: str) -> str:
    """The changelog topic for records that arrive as bytes: nothing to format on the way."""
    options = changelog_options(settings, "raw")
    return f"""CREATE TEMPORARY TABLE {table} (
  changelog_key BYTES,
  changelog_value BYTES
) WITH (
  {with_options(options)}
)"""


def operator_insert(view: str) -> str:
    """The INSERT of a view computed by the keyed functions."""
    return f"""INSERT INTO {record_sink(view)}
SELECT changelog_key, changelog_value FROM {OPERATOR_TABLES[view]}"""


def events_query() -> str:
    """What the job hands to its watermark floor (jobs/features/watermark.py)."""
    return f"SELECT {', '.join(EVENT_COLUMNS)} FROM behavior_source"


def plain_events_view() -> str:
    """The events view in SQL alone, without the floor: for --explain and SQL clients."""
    return f"""CREATE TEMPORARY VIEW {EVENTS_VIEW} AS
SELECT {", ".join(EVENT_COLUMNS)}, proctime FROM behavior_source"""


def source_statements(settings: FeatureJobSettings) -> list[str]:
    """The functions and the source table: what precedes the events view."""
    return [*function_ddl(), source_ddl(settings)]


def view_statements(settings: FeatureJobSettings) -> list[str]:
    """The views and sinks over the events view."""
    return [
        classified_view(settings),
        valid_view(),
        item_window_view(settings),
        dead_letter_ddl(settings),
        *(changelog_ddl(settings, table, sink_columns(row)) for table, row in SINK_ROWS.items()),
        *(raw_changelog_ddl(settings, record_sink(view)) for view in OPERATOR_TABLES),
    ]


def insert_statements(settings: FeatureJobSettings) -> list[str]:
    """The INSERTs to run together as one job: the dead letters and each chosen view."""
    if settings.window_mode == "sql":
        views = {
            "user_recent": user_recent_insert(settings),
            "user_window": user_window_insert(settings),
            "item_window": item_window_insert(),
            "category_window": category_window_insert(settings),
        }
    else:
        views = {view: operator_insert(view) for view in OPERATOR_TABLES}
    inserts = [dead_letter_insert(settings)]
    return inserts + [insert for view, insert in views.items() if view in settings.views]


def statements(settings: FeatureJobSettings) -> tuple[list[str], list[str]]:
    """(DDL and views to execute first, INSERTs) as plain SQL, the events view unfloored.

    The job itself (:func:`jobs.features.job.build`) registers the events view
    through the watermark floor instead of :func:`plain_events_view`, and the
    keyed functions' tables (``*_records``), which no SQL defines: their INSERTs
    say so in a comment.
    """
    ddl = [*source_statements(settings), plain_events_view(), *view_statements(settings)]
    inserts = insert_statements(settings)
    if settings.window_mode != "sql":
        note = (
            "-- {table}: records of the keyed Java functions (io.streamrec.flink.KeyedFeatures, "
            f"registered by jobs/features/keyed.py) over\n-- {OPERATOR_EVENTS_QUERY}\n"
        )
        inserts = [
            next((note.format(table=t) for t in OPERATOR_TABLES.values() if t in i), "") + i
            for i in inserts
        ]
    return ddl, inserts
