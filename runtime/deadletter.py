"""Dead-letter handling every consumer shares: bad input is data, never a crash.

A consumer decodes each message through a :class:`DeadLetterRouter`. A record
that breaks its contract is wrapped in a :class:`~schemas.records.DeadLetter`
with the exact bytes, the reason and where it came from, and produced to
``<source topic>.dlq``; the consumer moves on. Before committing offsets the
consumer calls :meth:`DeadLetterPublisher.flush`, so a bad record's offset is
only committed once its dead letter is durable (at-least-once, like the output).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from schemas.codec import RecordCodec, dead_letter_codec, wall_clock_ms
from schemas.errors import ContractError, InvalidRecord
from schemas.records import DeadLetter
from schemas.topics import dead_letter_topic

T = TypeVar("T")


class ConsumedMessage(Protocol):
    """The parts of ``confluent_kafka.Message`` a dead letter needs."""

    def value(self) -> bytes | None: ...
    def key(self) -> bytes | None: ...
    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...


class DeadLetterDeliveryError(ContractError):
    """Dead letters could not be written; the consumer must not commit past them."""


class DeadLetterPublisher:
    """Produces dead letters and counts them by error kind.

    ``producer`` is a ``confluent_kafka.Producer`` (or anything with its
    ``produce``/``poll``/``flush``); it should allow messages of
    :data:`runtime.kafka.DEAD_LETTER_MAX_BYTES`.
    """

    def __init__(
        self, producer: Any, consumer_name: str, clock: Callable[[], int] = wall_clock_ms
    ) -> None:
        self._producer = producer
        self._consumer_name = consumer_name
        self._clock = clock
        self._codec = dead_letter_codec()
        self._failures: list[str] = []
        self.counts: Counter[str] = Counter()

    def publish(self, message: ConsumedMessage, error: InvalidRecord) -> DeadLetter:
        letter = build_dead_letter(message, error, self._consumer_name, self._clock())
        payload = self._codec.encode(letter)
        topic = dead_letter_topic(letter.source_topic)
        while True:
            try:
                self._producer.produce(
                    topic, payload, key=letter.key, on_delivery=self._on_delivery
                )
                break
            except BufferError:
                # The local queue is full: serve delivery reports to make room.
                self._producer.poll(0.1)
        self.counts[error.kind] += 1
        return letter

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every dead letter is acknowledged; raise if any was lost."""
        remaining = self._producer.flush(timeout_s)
        if remaining:
            raise DeadLetterDeliveryError(f"{remaining} dead letters not delivered in time")
        if self._failures:
            failures, self._failures = self._failures, []
            raise DeadLetterDeliveryError(f"dead letters failed: {failures[:3]}")

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._failures.append(str(err))


def build_dead_letter(
    message: ConsumedMessage, error: InvalidRecord, consumer: str, now_ms: int
) -> DeadLetter:
    """Wrap a consumed message and the reason it was refused (pure)."""
    original = message.value() or b""
    partition = message.partition()
    offset = message.offset()
    return DeadLetter(
        original=bytes(original),
        original_size=len(original),
        key=message.key(),
        error=str(error),
        error_kind=error.kind,
        source_topic=message.topic() or "unknown",
        source_partition=-1 if partition is None else partition,
        source_offset=-1 if offset is None else offset,
        consumer=consumer,
        failed_at=now_ms,
    )


class DeadLetterRouter(Generic[T]):
    """Decode a message with ``codec``; on a contract breach dead-letter it and return None."""

    def __init__(self, codec: RecordCodec[T], publisher: DeadLetterPublisher) -> None:
        self.codec = codec
        self.publisher = publisher

    def decode(self, message: ConsumedMessage) -> T | None:
        try:
            return self.codec.decode(message.value() or b"")
        except InvalidRecord as error:
            self.publisher.publish(message, error)
            return None
