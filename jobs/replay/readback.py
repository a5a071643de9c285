"""Reading a topic back between two offset snapshots, to check what a replay delivered.

Offsets, not idle time-outs, decide when reading is done: snapshot the high
watermarks before producing and after, then read exactly that range. A re-run
on a topic that already holds data still counts only its own records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from runtime.kafka import KafkaSettings

Offsets = dict[int, int]

_NOT_READY = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._TIMED_OUT,
}


def _consumer(settings: KafkaSettings) -> Any:
    return Consumer(
        settings.client_config(
            **{
                "group.id": f"readback-{uuid.uuid4().hex[:12]}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
    )


def high_watermarks(settings: KafkaSettings, topic: str, timeout_s: float = 30.0) -> Offsets:
    """The next offset to be written, per partition (0 for every partition of an empty topic)."""
    consumer = _consumer(settings)
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        deadline = time.monotonic() + timeout_s
        return {
            partition: _high_watermark(consumer, TopicPartition(topic, partition), deadline)
            for partition in metadata.partitions
        }
    finally:
        consumer.close()


def _high_watermark(consumer: Any, partition: TopicPartition, deadline: float) -> int:
    # A partition created or moved a moment ago answers NOT_LEADER until the
    # broker has applied the new metadata: retriable, so retry until the deadline.
    while True:
        try:
            high: int = consumer.get_watermark_offsets(partition, timeout=5.0)[1]
            return high
        except KafkaException as exc:
            if exc.args[0].code() not in _NOT_READY or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def read_range(
    settings: KafkaSettings,
    topic: str,
    start: Offsets,
    end: Offsets,
    timeout_s: float = 60.0,
    batch: int = 1000,
) -> Iterator[Any]:
    """Yield every message with ``start[p] <= offset < end[p]``, in order within a partition.

    Completion is judged by the consumer's position, not by counting messages,
    because transaction markers take offsets that are never delivered.
    """
    wanted = {p: (start.get(p, 0), stop) for p, stop in end.items() if stop > start.get(p, 0)}
    if not wanted:
        return
    consumer = _consumer(settings)
    consumer.assign([TopicPartition(topic, p, first) for p, (first, _) in wanted.items()])
    try:
        yield from _drain(
            consumer, topic, {p: stop for p, (_, stop) in wanted.items()}, timeout_s, batch
        )
    finally:
        consumer.close()


def _drain(
    consumer: Any, topic: str, stops: Offsets, timeout_s: float, batch: int
) -> Iterator[Any]:
    pending = dict(stops)
    idle_polls = 0
    while pending:
        messages = consumer.consume(batch, timeout=1.0)
        idle_polls = 0 if messages else idle_polls + 1
        if idle_polls > timeout_s:
            raise TimeoutError(f"reading {topic} stalled; partitions left: {sorted(pending)}")
        for message in messages:
            if message.error() is not None:
                raise KafkaException(message.error())
            if message.offset() < stops[message.partition()]:
                yield message
        positions = consumer.position([TopicPartition(topic, p) for p in pending])
        for position in positions:
            if position.offset >= pending[position.partition]:
                del pending[position.partition]
