"""``python -m jobs.features``: the streaming feature job (also ``flink run -pym jobs.features``).

Reads behaviour events from Kafka and writes feature rows to the changelog
topic (``feature-updates``), which ``python -m jobs.feature_writer`` turns into
Feast online-store rows; bad and late events go to ``user-behavior.dlq``.
Every flag can also be set as ``STREAMREC_FEATURES_<FLAG>`` (e.g.
``STREAMREC_FEATURES_WINDOW_MS``); Kafka comes from ``STREAMREC_KAFKA_*``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from jobs.features.checkpoints import latest_checkpoint
from jobs.features.functions_jar import functions_jar
from jobs.features.settings import MINUTE_MS, FeatureJobSettings, env_overrides
from jobs.localstack.flink_connectors import kafka_connector_jar
from jobs.localstack.settings import StackSettings
from schemas.features import VIEW_TAGS
from schemas.kafka import KafkaSettings, TopicSpec, dead_letter_spec, ensure_topics

CHANGELOG_PARTITIONS = 4
_FLAGS: dict[str, tuple[type, str]] = {
    "source_topic": (str, "topic with behaviour events"),
    "changelog_topic": (str, "topic the feature rows go to"),
    "dead_letter_topic": (str, "topic for bad and late events"),
    "group_id": (str, "consumer group (offsets are committed on checkpoints)"),
    "window_ms": (int, f"window length (default {30 * MINUTE_MS})"),
    "slide_ms": (int, f"window slide (default {5 * MINUTE_MS})"),
    "sequence_length": (int, "events kept per user sequence"),
    "top_items": (int, "trending items kept per category"),
    "out_of_orderness_ms": (int, "watermark delay behind the newest event"),
    "idle_timeout_ms": (int, "a partition quiet this long stops holding back the watermark"),
    "max_future_skew_ms": (int, "events further ahead of the clock are refused"),
    "buffer_timeout_ms": (int, "longest wait of a half-full network buffer (latency)"),
    "checkpoint_dir": (Path, "enables checkpoints, kept here"),
    "checkpoint_interval_ms": (int, "time between checkpoints"),
    "parallelism": (int, "operator parallelism"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.features",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap-servers", help="default: $STREAMREC_KAFKA_BOOTSTRAP_SERVERS")
    for name, (kind, text) in _FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, help=text)
    parser.add_argument("--bounded", action="store_true", help="stop at the offsets seen at start")
    parser.add_argument(
        "--from-group-offsets", action="store_true", help="resume the group, not the earliest"
    )
    parser.add_argument(
        "--views", help=f"comma-separated subset of {','.join(VIEW_TAGS)} (default: all)"
    )
    parser.add_argument("--restore-from", help="checkpoint path, or 'latest' in --checkpoint-dir")
    parser.add_argument("--explain", action="store_true", help="print the SQL and exit")
    parser.add_argument(
        "--detach", action="store_true", help="submit and return (for `flink run -d`)"
    )
    parser.add_argument(
        "--jar",
        action="append",
        type=Path,
        help="connector/function jars to use instead of building them here (repeatable)",
    )
    return parser


def settings_from(args: argparse.Namespace, cache_dir: Path) -> FeatureJobSettings:
    kafka = KafkaSettings.from_env()
    values: dict[str, Any] = {
        name: _FLAGS[name][0](raw) for name, raw in env_overrides().items() if name in _FLAGS
    }
    values.update({name: getattr(args, name) for name in _FLAGS if getattr(args, name) is not None})
    return FeatureJobSettings(
        bootstrap_servers=args.bootstrap_servers or kafka.bootstrap_servers,
        kafka_properties=kafka.extra,
        bounded=args.bounded,
        from_earliest=not args.from_group_offsets,
        views=tuple(args.views.split(",")) if args.views else VIEW_TAGS,
        connector_jars=tuple(
            args.jar or (kafka_connector_jar(cache_dir), functions_jar(cache_dir))
        ),
        **values,
    )


def restore_path(args: argparse.Namespace, settings: FeatureJobSettings) -> str | None:
    if args.restore_from != "latest":
        return str(args.restore_from) if args.restore_from else None
    if settings.checkpoint_dir is None:
        raise SystemExit("--restore-from latest needs --checkpoint-dir")
    found = latest_checkpoint(settings.checkpoint_dir)
    if found is None:
        raise SystemExit(f"no complete checkpoint under {settings.checkpoint_dir}")
    return found.resolve().as_uri()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from(args, StackSettings.from_env().cache_dir)
    # Imported late: --help and --explain should not start a JVM.
    from jobs.features.job import build
    from jobs.features.sql import statements

    if args.explain:
        ddl, inserts = statements(settings)
        print(";\n\n".join([*ddl, *inserts]) + ";")
        return 0
    kafka = KafkaSettings(settings.bootstrap_servers, settings.kafka_properties)
    ensure_topics(
        kafka,
        [
            TopicSpec(settings.changelog_topic, CHANGELOG_PARTITIONS),
            dead_letter_spec(settings.dead_letter_topic),
        ],
    )
    restore = restore_path(args, settings)
    shown = {k: v for k, v in dataclasses.asdict(settings).items() if k != "kafka_properties"}
    print(f"feature job: {shown}" + (f", restoring {restore}" if restore else ""), file=sys.stderr)
    result = build(settings, restore).execute()
    client = result.get_job_client()
    if client is not None:
        print(f"job id {client.get_job_id()}", file=sys.stderr, flush=True)
    if not args.detach:
        result.wait()
    return 0
