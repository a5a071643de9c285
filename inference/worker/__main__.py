"""``streamrec-worker`` (``python -m inference.worker``): the inference worker (``--help``)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Sequence

from inference.worker import heap
from inference.worker.artifacts import ModelArtifacts
from inference.worker.errors import DeliveryStuck, WorkerError
from inference.worker.item_index import use_search_threads
from inference.worker.kafka_io import DeliveryError
from inference.worker.metrics import WorkerMetrics, serve
from inference.worker.settings import parse_args, settings_from
from inference.worker.worker import Worker
from runtime.kafka import (
    EXIT_RESTART,
    TopicSpec,
    dead_letter_spec,
    ensure_topics_once_up,
    request_topic_spec,
)
from runtime.redact import install_redaction
from schemas.topics import dead_letter_topic

logger = logging.getLogger("inference.worker")
__all__ = ["EXIT_RESTART", "main"]
# EXIT_RESTART (75): Kafka was away past the delivery timeout; a restart is the remedy
# (it replays from the last commit, and aborts a transaction left open).


async def _run(worker: Worker) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # The loop finishes the batch in hand, delivers and commits it, then closes.
        loop.add_signal_handler(sig, stop.set)
    try:
        await worker.run(stop)
    except DeliveryError as exc:
        logger.error("%s: exiting for a restart", exc)
        return EXIT_RESTART
    except DeliveryStuck as exc:
        # The stuck thread would block the interpreter's shutdown (it joins executor
        # threads): leave at once. Offsets of the batch are uncommitted and an open
        # transaction is aborted by the restart (same transactional id), so a
        # supervisor's restart resumes without loss or duplicates.
        logger.critical("%s: exiting for a restart", exc)
        logging.shutdown()
        os._exit(EXIT_RESTART)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        settings = settings_from(args)
        install_redaction(settings)
        logger.info("settings: %s", settings.describe())
        logger.info("recall searches on %d thread(s)", use_search_threads(settings.recall_threads))
        artifacts = ModelArtifacts.load(settings.model_dir)
        topics = [
            request_topic_spec(settings.requests_topic, partitions=4),
            TopicSpec(settings.output_topic, partitions=4),
            dead_letter_spec(dead_letter_topic(settings.requests_topic)),
        ]
        if (
            ensure_topics_once_up(settings.kafka, topics, settings.delivery_timeout_ms / 1000)
            is None
        ):
            return EXIT_RESTART  # Kafka away as long as a delivery may wait: restart later
        metrics = WorkerMetrics()
        serve(metrics, settings.metrics_port, settings.metrics_host)
        worker = Worker(settings, artifacts, metrics)
    except WorkerError as exc:
        logger.error("%s", exc)
        return 2
    # Everything long-lived is built: from here on the collector leaves it alone.
    thresholds = heap.settle(settings.gc_young_threshold)
    logger.info(
        "garbage collector thresholds %s, %d objects frozen", thresholds, gc.get_freeze_count()
    )
    logger.info("consuming %s as group %s", settings.requests_topic, settings.group_id)
    return asyncio.run(_run(worker))


if __name__ == "__main__":
    sys.exit(main())
