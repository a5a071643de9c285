"""The consume loop every stage shares: decode, dead-letter the bad, commit after output.

``poll_batch`` returns only valid records; invalid ones are already on their
way to ``<topic>.dlq``. ``commit`` first waits until those dead letters are
durable, then commits the offsets, so a crash replays rather than loses. The
caller produces and flushes its own output before calling ``commit``.

A caller that polls the next batch before the last one's output is durable takes
``consumed_offsets()`` after each poll and later commits exactly that snapshot:
``commit()`` with no offsets would also commit what was polled since.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from runtime.deadletter import DeadLetterPublisher, DeadLetterRouter
from runtime.kafka import DEAD_LETTER_MAX_BYTES, ConsumerErrors, KafkaSettings
from schemas.codec import RecordCodec

T = TypeVar("T")
# (topic, partition) -> the next offset to read there: what a commit stores.
Offsets = Mapping[tuple[str, int], int]
_log = logging.getLogger(__name__)

CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    # Cooperative rebalancing keeps the other partitions flowing while one moves.
    "partition.assignment.strategy": "cooperative-sticky",
}


class RecordConsumer(Generic[T]):
    """A Kafka consumer of one record type with dead-lettering and at-least-once commits."""

    def __init__(
        self,
        settings: KafkaSettings,
        topics: Sequence[str],
        group_id: str,
        codec: RecordCodec[T],
        **overrides: Any,
    ) -> None:
        config = settings.client_config(**CONSUMER_DEFAULTS)
        config.update({"group.id": group_id, **overrides})
        self._consumer = Consumer(config)
        self._consumer.subscribe(list(topics))
        producer = Producer(settings.client_config(**{"message.max.bytes": DEAD_LETTER_MAX_BYTES}))
        self.dead_letters = DeadLetterPublisher(producer, consumer_name=group_id)
        self._router = DeadLetterRouter(codec, self.dead_letters)
        self._uncommitted = False
        self._next_offsets: dict[tuple[str, int], int] = {}
        self._errors = ConsumerErrors(_log)

    def poll_batch(self, max_records: int = 500, timeout_s: float = 0.5) -> list[tuple[Any, T]]:
        """Up to ``max_records`` valid records as ``(message, record)`` pairs, in offset order."""
        batch = []
        for message in self._consumer.consume(max_records, timeout=timeout_s):
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise KafkaException(error)
                self._errors.seen(error)  # transient (a broker moving): librdkafka retries
                continue
            self._uncommitted = True
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if topic is not None and partition is not None and offset is not None:
                self._next_offsets[(topic, partition)] = offset + 1
            record = self._router.decode(message)
            if record is not None:
                batch.append((message, record))
        return batch

    def consumed_offsets(self) -> dict[tuple[str, int], int]:
        """A snapshot of the offsets that commit everything polled so far, invalid
        records included (their dead letters are flushed before any commit)."""
        return dict(self._next_offsets)

    def commit(self, offsets: Offsets | None = None) -> None:
        """Make dead letters durable, then commit ``offsets`` (a snapshot from
        :meth:`consumed_offsets`), or everything consumed when none are given.

        Offsets of partitions no longer assigned are left out: their new owner
        commits its own progress, and an older offset from here would rewind it.
        """
        if offsets is None:
            if not self._uncommitted:
                return
            self.dead_letters.flush()
            self._consumer.commit(asynchronous=False)
            self._uncommitted = False
            return
        assigned = {(tp.topic, tp.partition) for tp in self._consumer.assignment()}
        owned = {where: offset for where, offset in offsets.items() if where in assigned}
        if not owned:
            return
        self.dead_letters.flush()
        self._consumer.commit(offsets=topic_partitions(owned), asynchronous=False)

    def close(self) -> None:
        self._consumer.close()


def topic_partitions(offsets: Offsets) -> list[TopicPartition]:
    return [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
