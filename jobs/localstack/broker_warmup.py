"""Warm a freshly started broker before the latency of the loop is measured.

A broker JVM started cold interprets, then compiles, its request path under the
first traffic it sees. In ``make demo`` on a stack started with it, the broker
took 0.6-0.9 of a core through the first 15 s of the replay against 0.15 once
warm, and the request→answer p99 of those seconds was 244-336 ms against 22-40 ms
afterwards; on a broker kept from an earlier run the same seconds were 47 ms.
Brokers in production run warm, so a measurement of the loop on a fresh local
stack first puts the same kinds of requests through its broker on a topic of its
own: single-record produces to a topic stamped with the broker's append time, as
the request producers send them; batched, idempotent produces as the replay and
the feature job send events and rows; both LZ4-compressed as the product's
producers are (a broker decompresses every batch to validate it, and warming
uncompressed traffic left most of the compile work for the measured run);
fetches that long-poll, and offset commits.

The warm-up topics are deleted afterwards; nothing else on the broker is touched.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from runtime.kafka import LOG_APPEND_TIME, KafkaSettings, TopicSpec, ensure_topics

PARTITIONS = 4
# About the size and make-up of an encoded event, so that LZ4 finds what it finds there.
VALUE = (
    b'{"user_id":1017,"item_id":2333346,"category_id":2520771,"behavior":"pv","ts":1511561733000}'
)
COMPRESSION = "lz4"
# Commit the consumer's offsets every this many records, as a worker commits per batch;
# synchronously, so that commits never pile up behind a coordinator still loading.
COMMIT_EVERY = 500
POLL_S = 0.1


@dataclass(frozen=True)
class WarmUpTopics:
    batched: str  # the replay's and the feature job's shape: stamped by the producer
    single: str  # the requests' shape: stamped with the broker's append time


@dataclass(frozen=True)
class WarmUp:
    """What went through the broker while it warmed."""

    single_produces: int
    batched_records: int
    consumed: int
    seconds: float


def warm_broker(
    kafka: KafkaSettings,
    topic: str,
    seconds: float,
    on_progress: Callable[[float], None] | None = None,
) -> WarmUp:
    """Put ``seconds`` of mixed produce, fetch and commit traffic through the broker.

    ``topic`` and ``topic``-appended are created for the warm-up and deleted after
    it. ``on_progress`` gets the seconds elapsed, about once per second.
    """
    if seconds <= 0:
        return WarmUp(0, 0, 0, 0.0)
    topics = WarmUpTopics(topic, f"{topic}-appended")
    ensure_topics(
        kafka,
        [
            TopicSpec(topics.batched, PARTITIONS),
            TopicSpec(topics.single, PARTITIONS, dict(LOG_APPEND_TIME)),
        ],
    )
    try:
        return _traffic(kafka, topics, seconds, on_progress)
    finally:
        _delete_topics(kafka, [topics.batched, topics.single])


def _traffic(
    kafka: KafkaSettings,
    topics: WarmUpTopics,
    seconds: float,
    on_progress: Callable[[float], None] | None,
) -> WarmUp:
    stop = threading.Event()
    counts = {"single": 0, "batched": 0}

    def single() -> None:
        # One record per produce request, each waited for: the request producers' shape.
        producer = Producer(
            kafka.client_config(acks="all", linger_ms=0, compression_type=COMPRESSION)
        )
        while not stop.is_set():
            producer.produce(topics.single, VALUE, key=str(counts["single"]).encode())
            producer.flush(5.0)
            counts["single"] += 1

    def batched() -> None:
        # The replay's shape: many records per request, lingering a few milliseconds.
        producer = Producer(
            kafka.client_config(
                acks="all", linger_ms=10, compression_type=COMPRESSION, enable_idempotence=True
            )
        )
        while not stop.is_set():
            for _ in range(100):
                try:
                    producer.produce(topics.batched, VALUE, key=str(counts["batched"]).encode())
                except BufferError:
                    break
                counts["batched"] += 1
            producer.poll(0.005)
        producer.flush(5.0)

    threads = [threading.Thread(target=fn, daemon=True) for fn in (single, batched)]
    consumer = Consumer(
        kafka.client_config(
            group_id=f"{topics.batched}.group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_wait_max_ms=50,
        )
    )
    consumer.subscribe([topics.batched, topics.single])
    consumed = 0
    started = time.monotonic()
    last_report = started
    for thread in threads:
        thread.start()
    try:
        while (elapsed := time.monotonic() - started) < seconds:
            for message in consumer.consume(500, POLL_S):
                if message.error() is None:
                    consumed += 1
                    if consumed % COMMIT_EVERY == 0:
                        _commit(consumer)
            if on_progress is not None and time.monotonic() - last_report >= 1.0:
                last_report = time.monotonic()
                on_progress(elapsed)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10.0)
        consumer.close()
    return WarmUp(counts["single"], counts["batched"], consumed, time.monotonic() - started)


def _commit(consumer: Consumer) -> None:
    # A coordinator not ready yet, or a rebalance: the next commit tries again.
    with contextlib.suppress(KafkaException):
        consumer.commit(asynchronous=False)


def _delete_topics(kafka: KafkaSettings, topics: list[str]) -> None:
    admin = AdminClient(kafka.client_config())
    for future in admin.delete_topics(topics, operation_timeout=30).values():
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if "UNKNOWN_TOPIC" not in str(exc):
                raise
