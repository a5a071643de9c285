"""``streamrec-features``: the streaming feature job (also ``flink run -pym jobs.features``).

Reads behaviour events from Kafka and writes feature rows to the changelog
topic (``feature-updates``), which ``streamrec-feature-writer`` turns into
Feast online-store rows; bad and late events go to ``user-behavior.dlq``.
Every setting flag defaults to its variable, shown in brackets (e.g.
``STREAMREC_FEATURES_WINDOW_MS``); Kafka comes from ``STREAMREC_KAFKA_*``.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import socket
import sys
from pathlib import Path

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ResourceType,
)

from jobs.features.checkpoints import latest_checkpoint
from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.features.metrics import reporter_jars
from jobs.features.settings import FeatureJobSettings
from runtime.kafka import (
    EXIT_RESTART,
    KafkaSettings,
    TopicSpec,
    dead_letter_spec,
    ensure_topics_once_up,
)
from runtime.redact import install_redaction
from runtime.settings import CACHE_DIR_ENV, cache_dir

CHANGELOG_PARTITIONS = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-features",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    FeatureJobSettings.add_flags(parser)
    # Kept from before --no-from-earliest: same meaning.
    parser.add_argument("--from-group-offsets", action="store_true", help="= --no-from-earliest")
    parser.add_argument(
        "--restore-from",
        help="checkpoint path; 'latest' in --checkpoint-dir (an error if none); 'auto': the "
        "latest if there is one, else a fresh start (what a restart policy wants)",
    )
    parser.add_argument("--explain", action="store_true", help="print the SQL and exit")
    parser.add_argument(
        "--detach", action="store_true", help="submit and return (for `flink run -d`)"
    )
    parser.add_argument(
        "--jar",
        action="append",
        type=Path,
        help="connector/function jars to use instead of building them here (repeatable; "
        f"built under ${CACHE_DIR_ENV}, default .cache)",
    )
    return parser


# How long a job started while Kafka is away waits for it before exiting for a restart.
START_WAIT_S = 300.0


def settings_from(args: argparse.Namespace, cache_dir: Path) -> FeatureJobSettings:
    """Environment, then flags; the jars are built (or found) only when none is given."""
    if args.from_group_offsets:
        args.from_earliest = False
    jars = tuple(args.jar or (kafka_connector_jar(cache_dir), functions_jar(cache_dir)))
    return FeatureJobSettings.load(None, args, connector_jars=jars)


def with_metrics(
    args: argparse.Namespace, settings: FeatureJobSettings, cache_dir: Path
) -> FeatureJobSettings:
    """A local run serves Flink's metrics: the reporter's jars join ``pipeline.jars``.

    A submitted job (``--detach``) reports through its cluster's own reporter (the keys
    are read only when a cluster process starts), so it carries none.
    """
    if args.detach or not settings.metrics_port:
        return dataclasses.replace(settings, metrics_port=0)
    return dataclasses.replace(settings, metrics_jars=reporter_jars(cache_dir))


def port_taken(host: str, port: int) -> bool:
    """Whether ``host:port`` is bound by someone else (asked as the JVM's server binds it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def warn_if_metrics_port_taken(settings: FeatureJobSettings) -> None:
    # Flink logs a reporter that cannot bind to its own log file and runs on without it.
    host, port = settings.metrics_host, settings.metrics_port
    if port and port_taken(host, port):
        print(
            f"feature job: {host}:{port} is taken, so Flink's metrics will not be served "
            f"(--metrics-port moves them, 0 turns them off)",
            file=sys.stderr,
        )


def restore_path(args: argparse.Namespace, settings: FeatureJobSettings) -> str | None:
    if args.restore_from not in ("latest", "auto"):
        return str(args.restore_from) if args.restore_from else None
    if settings.checkpoint_dir is None:
        raise SystemExit(f"--restore-from {args.restore_from} needs --checkpoint-dir")
    found = latest_checkpoint(settings.checkpoint_dir)
    if found is None:
        if args.restore_from == "auto":
            return None  # the first start: nothing to restore yet
        raise SystemExit(f"no complete checkpoint under {settings.checkpoint_dir}")
    return found.resolve().as_uri()


def topic_message_limit(kafka: KafkaSettings, topic: str, timeout_s: float = 30.0) -> int:
    """The largest message ``topic`` takes: its own ``max.message.bytes`` or the broker's."""
    admin = AdminClient(kafka.client_config())
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
    return int(entries["max.message.bytes"].value)


def fit_dead_letters_to_topic(
    kafka: KafkaSettings, settings: FeatureJobSettings
) -> FeatureJobSettings:
    """Dead letters no larger than their topic takes (one it refused would fail the job).

    The topic is created with ``dead_letter_max_bytes``, but one that already
    existed keeps its own limit, which may be smaller (e.g. the broker's 1 MiB).
    """
    limit = topic_message_limit(kafka, settings.dead_letter_topic)
    if limit >= settings.dead_letter_max_bytes:
        return settings
    print(
        f"feature job: {settings.dead_letter_topic} takes at most {limit} bytes: "
        "larger dead letters keep a prefix of the original",
        file=sys.stderr,
    )
    return dataclasses.replace(settings, dead_letter_max_bytes=limit)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from(args, cache_dir())
    # Imported late: --help and --explain should not start a JVM.
    from jobs.features.job import build
    from jobs.features.sql import statements

    if args.explain:
        # Printed for people and logs: from masked settings, never the real secrets.
        ddl, inserts = statements(settings.masked())
        print(";\n\n".join([*ddl, *inserts]) + ";")
        return 0
    settings = with_metrics(args, settings, cache_dir())
    # Library warnings (PyFlink, the Kafka admin) go through the root handler, redacted.
    logging.basicConfig(
        level=logging.WARNING, format="feature job: %(name)s: %(message)s", stream=sys.stderr
    )
    install_redaction(settings)
    kafka = KafkaSettings(settings.bootstrap_servers, settings.kafka_properties)
    topics = [
        TopicSpec(settings.changelog_topic, CHANGELOG_PARTITIONS),
        TopicSpec(
            settings.dead_letter_topic,
            dead_letter_spec(settings.dead_letter_topic).partitions,
            {"max.message.bytes": str(settings.dead_letter_max_bytes)},
        ),
    ]
    # Started while Kafka is away (a restart during a broker restart): wait, as the
    # running job's own clients would.
    if ensure_topics_once_up(kafka, topics, START_WAIT_S) is None:
        return EXIT_RESTART
    settings = fit_dead_letters_to_topic(kafka, settings)
    restore = restore_path(args, settings)
    shown = settings.describe() + (f", restoring {restore}" if restore else "")
    print(f"feature job: {shown}", file=sys.stderr)
    warn_if_metrics_port_taken(settings)
    result = build(settings, restore).execute()
    client = result.get_job_client()
    if client is not None:
        print(f"job id {client.get_job_id()}", file=sys.stderr, flush=True)
    if not args.detach:
        result.wait()
    return 0
