"""Adaptive batching on a real broker: a batch leaves with what is waiting when the ranker is
idle, and keeps growing with the backlog only while the ranker is busy."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from inference.worker.arrival import LOG_APPEND_TIME
from inference.worker.kafka_io import (
    IDLE_WAIT_S,
    DeliveryError,
    Polled,
    RecommendationSink,
    RequestStream,
)
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from schemas.codec import request_codec, wall_clock_ms
from schemas.records import RecItem, Recommendation, RecRequest
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
        polled = stream.poll(100, 0.0, lambda: started + busy_for_s - time.monotonic())
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


@pytest.mark.parametrize(
    "busy_for_s",
    [
        pytest.param(0.0, id="idle ranker"),
        # Preparing ahead: the batch leaves at its cut-off, to be prepared while the ranker works.
        pytest.param(LATE_AFTER_S / 3, id="busy ranker, gathering time up"),
    ],
)
def test_a_batch_takes_what_is_waiting_without_waiting_for_more(
    kafka: KafkaSettings, stream: tuple[RequestStream, WorkerTopics], busy_for_s: float
) -> None:
    consumer, topics = stream
    produce(kafka, topics.requests, _requests("now", 3))
    late = _produce_late(kafka, topics.requests, _requests("late", 2))
    try:
        batch = _first_batch(consumer, busy_for_s=busy_for_s)
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


def test_the_wait_for_a_first_request_is_idle_and_its_record_carries_the_append_time(
    kafka: KafkaSettings, stream: tuple[RequestStream, WorkerTopics]
) -> None:
    consumer, topics = stream
    before = wall_clock_ms()
    late = _produce_late(kafka, topics.requests, _requests("late", 1))
    idle_s, polled = 0.0, Polled()
    try:
        deadline = time.monotonic() + 30
        while not polled.records and time.monotonic() < deadline:
            polled = consumer.poll(100, 0.0)
            idle_s += polled.idle_s
    finally:
        late.join()
    [(message, request)] = polled.records
    assert request.request_id == "late-0"
    # The polls waited for it (idle), and the batch that took it waited no more.
    assert idle_s >= LATE_AFTER_S * 0.8
    assert polled.idle_s < IDLE_WAIT_S * 1.5 and polled.decode_s < 0.5
    kind, appended = message.timestamp()
    assert kind == LOG_APPEND_TIME  # the requests topic is created so (request_topic_spec)
    assert before <= appended <= polled.received_ms + 5  # the broker runs on this clock


def _keep_producing(kafka: KafkaSettings, topic: str, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        n = 0
        while not stop.is_set():
            produce(kafka, topic, _requests(f"steady{n}", 20))
            n += 1
            time.sleep(0.05)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


class SecondMember:
    """A second stream of the group, joining a second after start and polling until stopped."""

    def __init__(self, kafka: KafkaSettings, topic: str, group: str) -> None:
        self.stop = threading.Event()
        self.joined_at: float | None = None
        self._thread = threading.Thread(target=self._run, args=(kafka, topic, group))
        self._thread.start()

    def _run(self, kafka: KafkaSettings, topic: str, group: str) -> None:
        time.sleep(1.0)
        stream = RequestStream(kafka, topic, group, request_codec(), True)
        while not self.stop.is_set():
            stream.poll(10, 0.0)  # joins the group, then keeps its partitions
            if self.joined_at is None and stream.consumer.assignment():
                self.joined_at = time.monotonic()
        stream.close()

    def gathering(self, started: float) -> float:
        """Keep a batch gathering until a second after this member got partitions."""
        now = time.monotonic()
        if now - started > 40:
            return 0.0
        return 1.0 if self.joined_at is None else self.joined_at + 1.0 - now

    def close(self) -> None:
        self.stop.set()
        self._thread.join()


def test_messages_of_a_partition_revoked_while_gathering_leave_the_batch(
    kafka: KafkaSettings,
) -> None:
    """Exactly-once: a batch must hold only partitions its consumer still owns when it is
    delivered, or its offsets are committed under the new generation while the new owner
    answers the same requests too."""
    topics = WorkerTopics.create(kafka, partitions=4)
    group = f"g-{topics.requests}"
    first = RequestStream(kafka, topics.requests, group, request_codec(), True)
    produce(kafka, topics.requests, _requests("warm", 40))
    assert _first_batch(first, busy_for_s=0.0)
    stop = threading.Event()
    producing = _keep_producing(kafka, topics.requests, stop)
    second = SecondMember(kafka, topics.requests, group)
    try:
        started = time.monotonic()
        # The ranker "busy" across the rebalance: the batch gathers through it.
        polled = first.poll(100_000, 0.0, lambda: second.gathering(started))
        owned = {(p.topic, p.partition) for p in first.consumer.assignment()}
        assert len(owned) < 4, "the second member never joined: nothing was revoked"
        batch_partitions = {(m.topic(), m.partition()) for m, _ in polled.records}
        assert set(polled.offsets) <= owned
        assert batch_partitions <= owned
    finally:
        stop.set()
        producing.join()
        second.close()
        first.close()


def _one_request_polled(
    kafka: KafkaSettings, topics: WorkerTopics, group: str, prefix: str
) -> tuple[RequestStream, Polled]:
    """An exactly-once request stream that has polled one request of its own."""
    stream = RequestStream(kafka, topics.requests, group, request_codec(), True)
    produce(kafka, topics.requests, _requests(prefix, 1))
    polled = Polled()
    while not polled.records:
        polled = stream.poll(10, 1.0, lambda: 0.0)
    return stream, polled


def test_a_fenced_sink_raises_a_delivery_error_and_still_closes(kafka: KafkaSettings) -> None:
    """A transaction the broker gave up on (a timeout during an outage, or a newer instance
    under the same id) makes the producer fatal: the delivery fails with DeliveryError
    (the worker exits for a restart) and closing must not raise over it."""
    topics = WorkerTopics.create(kafka, partitions=1)
    group = f"g-{topics.requests}"
    stream, polled = _one_request_polled(kafka, topics, group, "fenced")
    old = RecommendationSink(kafka, topics.output, group, "fenced-id", 10_000, 20_000)
    newer = RecommendationSink(kafka, topics.output, group, "fenced-id", 10_000, 20_000)
    try:
        with pytest.raises(DeliveryError, match=r"fenced|epoch"):
            old.deliver([], polled, stream)
        old.close()  # raised KafkaException(_FENCED) before: the worker then exited 1
    finally:
        newer.close()
        stream.close()


class FencedOnAbort:
    """The sink's real producer, with a newer instance under its transactional id
    started just before the abort: the abort that follows is refused as fenced."""

    def __init__(self, producer: Any, start_newer: Callable[[], object]) -> None:
        self._producer = producer
        self._start_newer = start_newer

    def abort_transaction(self, *args: Any) -> None:
        self._start_newer()
        self._producer.abort_transaction(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._producer, name)


def test_an_abort_refused_as_fenced_raises_a_delivery_error(kafka: KafkaSettings) -> None:
    """A transaction fails (a record the topic refuses), and its abort is then fenced, as
    when a coordinator timed the transaction out during a broker outage: the worker
    exits for a restart (DeliveryError) instead of crashing on the abort's error."""
    topics = WorkerTopics.create(kafka, partitions=1)
    tiny = f"{topics.output}-tiny"
    ensure_topics(kafka, [TopicSpec(tiny, 1, {"max.message.bytes": "100"})])
    group = f"g-{topics.requests}"
    stream, polled = _one_request_polled(kafka, topics, group, "abort")
    too_big = Recommendation(
        "abort-0", 1, [RecItem(i, 0.5, "embedding") for i in range(20)], "ranker_python:1",
        None, wall_clock_ms(),
    )  # fmt: skip
    newer: list[RecommendationSink] = []
    old = RecommendationSink(kafka, tiny, group, "abort-fenced-id", 10_000, 20_000)
    old.producer = FencedOnAbort(  # type: ignore[assignment]
        old.producer,
        lambda: newer.append(
            RecommendationSink(kafka, tiny, group, "abort-fenced-id", 10_000, 20_000)
        ),
    )
    try:
        with pytest.raises(DeliveryError, match="its abort failed"):
            old.deliver([too_big], polled, stream)
        assert newer, "the transaction did not fail, so nothing was aborted"
        old.close()
    finally:
        for sink in newer:
            sink.close()
        stream.close()
