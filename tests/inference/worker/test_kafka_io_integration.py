"""Adaptive batching on a real broker: a batch leaves with what is waiting when the ranker is
idle, and keeps growing with the backlog only while the ranker is busy."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from inference.worker.kafka_io import RequestStream
from schemas.codec import request_codec, wall_clock_ms
from schemas.kafka import KafkaSettings
from schemas.records import RecRequest
from tests.inference.worker.harness import WorkerTopics, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
LATE_AFTER_S = 0.3


def _requests(prefix: str, count: int) -> list[RecRequest]:
    now = wall_clock_ms()
    return [
        RecRequest(request_id=f"{prefix}-{n}", user_id=n + 1, ts=now, k=5) for n in range(count)
    ]


@pytest.fixture
def stream(kafka: KafkaSettings) -> Iterator[tuple[RequestStream, WorkerTopics]]:
    """A stream that has joined its group and read a first request (fetching is under way)."""
    topics = WorkerTopics.create(kafka, partitions=1)
    stream = RequestStream(kafka, topics.requests, f"g-{topics.requests}", request_codec(), False)
    produce(kafka, topics.requests, _requests("warm", 1))
    assert _first_batch(stream, busy_for_s=0.0) == ["warm-0"]
    yield stream, topics
    stream.close()


def _first_batch(stream: RequestStream, busy_for_s: float) -> list[str]:
    """The first non-empty batch, polled with the ranker busy for ``busy_for_s``."""
    started = time.monotonic()
    deadline = started + 30
    while time.monotonic() < deadline:
        polled = stream.poll(100, 0.0, lambda: time.monotonic() - started < busy_for_s)
        if polled.records:
            return [record.request_id for _, record in polled.records]
    raise AssertionError("no request arrived within 30 s")


def _produce_late(kafka: KafkaSettings, topic: str, requests: list[RecRequest]) -> threading.Thread:
    def later() -> None:
        time.sleep(LATE_AFTER_S)
        produce(kafka, topic, requests)

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_an_idle_ranker_takes_what_is_waiting_without_waiting_for_more(
    kafka: KafkaSettings, stream: tuple[RequestStream, WorkerTopics]
) -> None:
    consumer, topics = stream
    produce(kafka, topics.requests, _requests("now", 3))
    late = _produce_late(kafka, topics.requests, _requests("late", 2))
    try:
        batch = _first_batch(consumer, busy_for_s=0.0)
    finally:
        late.join()
    # Whatever of the first three had reached the worker, and none of the later two.
    assert batch and batch == ["now-0", "now-1", "now-2"][: len(batch)]


def test_a_busy_ranker_lets_the_batch_grow_with_the_backlog(
    kafka: KafkaSettings, stream: tuple[RequestStream, WorkerTopics]
) -> None:
    consumer, topics = stream
    produce(kafka, topics.requests, _requests("now", 3))
    late = _produce_late(kafka, topics.requests, _requests("late", 2))
    try:
        # Busy long past the late requests' arrival: they join the same batch.
        batch = _first_batch(consumer, busy_for_s=LATE_AFTER_S + 5)
    finally:
        late.join()
    assert batch == ["now-0", "now-1", "now-2", "late-0", "late-1"]
