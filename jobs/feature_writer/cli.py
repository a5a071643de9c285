"""``streamrec-feature-writer``: the changelog-to-online-store process."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

from jobs.feature_writer.errors import SettingsError
from jobs.feature_writer.loop import FeatureWriterLoop
from jobs.feature_writer.metrics import serve
from jobs.feature_writer.settings import WriterSettings, parse_args, settings_from
from runtime.consumer import RecordConsumer
from runtime.kafka import EXIT_RESTART, TopicSpec, dead_letter_spec, ensure_topics_once_up
from runtime.online.connect import OnlineClient, connect
from runtime.online.redis_store import OnlineStoreWriter
from runtime.redact import install_redaction
from schemas.codec import feature_update_codec
from schemas.topics import dead_letter_topic

logger = logging.getLogger("jobs.feature_writer")


# How long a writer started while Kafka is away waits for it before exiting for a restart.
START_WAIT_S = 300.0


def redis_client(url: str) -> OnlineClient:
    """A client that fails fast, so the loop's own backoff handles outages."""
    return connect(url, socket_timeout=5.0, socket_connect_timeout=2.0)


def build_loop(settings: WriterSettings, stop: threading.Event | None = None) -> FeatureWriterLoop:
    """Consumer, online-store writer and loop wired from ``settings``; its metrics, in a
    registry of their own, are ``loop.metrics``."""
    topics = [
        TopicSpec(settings.topic, partitions=4),
        dead_letter_spec(dead_letter_topic(settings.topic)),
    ]
    if ensure_topics_once_up(settings.kafka, topics, START_WAIT_S) is None:
        raise SystemExit(EXIT_RESTART)
    consumer: RecordConsumer[Any] = RecordConsumer(
        settings.kafka, [settings.topic], settings.group_id, feature_update_codec()
    )
    writer = OnlineStoreWriter(
        redis_client(settings.redis_url),
        settings.project,
        settings.key_ttl_seconds,
        replica_acks=settings.redis_replica_acks,
        wait_timeout_ms=settings.redis_wait_timeout_ms,
    )
    return FeatureWriterLoop(
        consumer,
        writer,
        settings.conversion,
        batch_size=settings.batch_size,
        batch_timeout_s=settings.batch_timeout_s,
        stop=stop,
        covisit=settings.covisit,
        overlap=settings.overlap_writes,
    )


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT finish the current batch, commit and exit."""

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %s: finishing the current batch", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = settings_from(args)
    except SettingsError as exc:
        logger.error("%s", exc)
        return 2
    install_redaction(settings)
    logger.info("starting: %s", settings.describe())
    stop = threading.Event()
    install_stop_handlers(stop)
    loop = build_loop(settings, stop)
    try:
        # Served once Kafka answered, like the worker's: a scrape that answers means running.
        serve(loop.metrics, settings.metrics_port, settings.metrics_host)
        loop.run(max_records=args.max_records, max_seconds=args.max_seconds)
    finally:
        loop.close()
    return 0
