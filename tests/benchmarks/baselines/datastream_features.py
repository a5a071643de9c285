"""The user click-sequence windows as a Python DataStream job: the implementation not chosen.

Kept runnable (``python -m tests.benchmarks.baselines.datastream_features``) because ``make
bench-features`` measures it side by side with the SQL job: here every event
crosses into Python (decode, timestamp, window function), which is what makes
it several times slower than the SQL job computing the same windows in the JVM.
It writes the same ``user_window`` changelog rows, so its output is checked
against the same reference.

Its watermark is assigned after decoding, over the source's merged stream: with
several partitions one drained ahead of the others makes their events late, so
it is only exact on a single-partition topic (PyFlink ignores a Python
timestamp assigner given to ``from_source``, the per-partition way). The
benchmark runs both jobs on one partition.
"""

from __future__ import annotations

import argparse
import os
import site
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from jobs.features.settings import FeatureJobSettings
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.features import UserWindow, pack_event


def decode(codec: Any, raw: str) -> tuple[int, int, int, str, int] | None:
    """A valid event as a tuple (cheap to ship between operators), else None."""
    try:
        event = codec.decode(raw.encode())
    except Exception:  # the SQL job dead-letters these; this benchmark baseline drops them
        return None
    return event.user_id, event.item_id, event.category_id, event.behavior, event.ts


def window_row(
    user_id: int, start: int, end: int, events: Iterable[tuple[Any, ...]], length: int
) -> str:
    members = list(events)
    counts = dict.fromkeys(("pv", "cart", "fav", "buy"), 0)
    for event in members:
        counts[event[3]] += 1
    packed = sorted(pack_event(e[4], e[1], e[2], e[3]) for e in members)[-length:]
    row = UserWindow(user_id, start, end, packed, **counts)
    return msgspec.json.encode(row).decode()


def build(settings: FeatureJobSettings) -> Any:
    from pyflink.common import Configuration, Duration, Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.common.time import Time
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import (
        MapFunction,
        ProcessWindowFunction,
        StreamExecutionEnvironment,
    )
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )
    from pyflink.datastream.window import SlidingEventTimeWindows

    class Decode(MapFunction):  # type: ignore[misc]
        def open(self, runtime_context: Any) -> None:
            self.codec = event_codec()  # built on the worker: decoders do not pickle

        def map(self, value: str) -> Any:
            return decode(self.codec, value)

    class EventTime(TimestampAssigner):  # type: ignore[misc]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[4])

    class UserWindows(ProcessWindowFunction):  # type: ignore[misc]
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[str]:
            window = context.window()
            yield window_row(key, window.start, window.end, elements, settings.sequence_length)

    config = Configuration()
    config.set_string("python.execution-mode", "thread")  # ~30x process mode here
    config.set_string("python.executable", sys.executable)  # thread mode embeds this one
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(settings.parallelism)
    env.add_jars(*(path.resolve().as_uri() for path in settings.connector_jars))
    source = KafkaSource.builder().set_bootstrap_servers(settings.bootstrap_servers)
    source = source.set_topics(settings.source_topic).set_group_id(settings.group_id)
    source = source.set_starting_offsets(KafkaOffsetsInitializer.earliest())
    source = source.set_value_only_deserializer(SimpleStringSchema())
    if settings.bounded:
        source = source.set_bounded(KafkaOffsetsInitializer.latest())
    watermarks = (
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(settings.out_of_orderness_ms)
        )
        .with_idleness(Duration.of_millis(settings.idle_timeout_ms))
        .with_timestamp_assigner(EventTime())
    )
    event_type = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.STRING(),
                              Types.LONG()])  # fmt: skip
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(settings.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(settings.changelog_topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    (
        env.from_source(source.build(), WatermarkStrategy.no_watermarks(), "events")
        .map(Decode(), output_type=Types.PICKLED_BYTE_ARRAY())
        .filter(lambda event: event is not None)
        .map(lambda event: event, output_type=event_type)
        .assign_timestamps_and_watermarks(watermarks)
        .key_by(lambda event: event[0], key_type=Types.LONG())
        .window(
            SlidingEventTimeWindows.of(
                Time.milliseconds(settings.window_ms), Time.milliseconds(settings.slide_ms)
            )
        )
        .process(UserWindows(), output_type=Types.STRING())
        .sink_to(sink)
    )
    return env


def embed_this_environment() -> None:
    """Thread mode runs Python inside the JVM (pemja), which starts from the base
    interpreter's paths: hand it this virtual environment and the project."""
    paths = [*site.getsitepackages(), str(Path(__file__).resolve().parents[3])]
    current = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *([current] if current else [])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.baselines.datastream_features", description=__doc__
    )
    parser.add_argument("--source-topic", required=True)
    parser.add_argument("--changelog-topic", required=True)
    parser.add_argument("--group-id", default="streamrec-features-datastream")
    parser.add_argument("--bounded", action="store_true")
    parser.add_argument("--jar", action="append", type=Path, required=True)
    args = parser.parse_args(argv)
    embed_this_environment()
    settings = FeatureJobSettings(
        bootstrap_servers=KafkaSettings.from_env().bootstrap_servers,
        source_topic=args.source_topic,
        changelog_topic=args.changelog_topic,
        group_id=args.group_id,
        bounded=args.bounded,
        connector_jars=tuple(args.jar),
    )
    build(settings).execute("streamrec-features-datastream")
    return 0


if __name__ == "__main__":
    sys.exit(main())
