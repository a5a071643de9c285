"""The worker's Kafka shell: micro-batches of requests in, recommendations out, offsets after.

:class:`RequestStream` polls a micro-batch bounded by size and time and splits it
into valid requests and refused messages (which become dead letters when the
batch is delivered, so a dead letter is never ahead of its batch's commit). It
tells apart the time spent waiting for a first request (idle) from gathering and
decoding the batch (work), and when the batch's first request arrived.
:class:`RecommendationSink` delivers a batch: at-least-once (produce, flush, then
store exactly the batch's offsets, committed in the background) or exactly-once
(one Kafka transaction holding the recommendations, the dead letters and the
consumed offsets); it says how long producing and committing took.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from inference.worker.errors import WorkerError
from inference.worker.stuck import CallClock
from runtime.consumer import CONSUMER_DEFAULTS, topic_partitions
from runtime.deadletter import DeadLetterPublisher
from runtime.kafka import DEAD_LETTER_MAX_BYTES, ConsumerErrors, KafkaSettings
from schemas.codec import RecordCodec, recommendation_codec, wall_clock_ms
from schemas.errors import InvalidRecord
from schemas.records import Recommendation, RecRequest

logger = logging.getLogger(__name__)
IDLE_WAIT_S = 0.1
GATHER_SLICE_S = 0.002
AUTO_COMMIT_INTERVAL_MS = 500
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)
# How often a delivery waiting for Kafka says so.
FLUSH_SLICE_S = 5.0


class DeliveryError(WorkerError):
    """Recommendations (or dead letters) could not be made durable; offsets stay uncommitted."""


@dataclass
class Polled:
    records: list[tuple[Any, RecRequest]] = field(default_factory=list)
    refused: list[tuple[Any, InvalidRecord]] = field(default_factory=list)
    # Next offset to commit per (topic, partition): last consumed + 1.
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    # Seconds waiting for a first request (idle, in no stage) and decoding the batch.
    idle_s: float = 0.0
    decode_s: float = 0.0
    # Wall clock (ms) when the batch's first request arrived; 0 when not known.
    received_ms: int = 0
    # Transient consumer errors met (librdkafka retries them).
    kafka_errors: int = 0

    def __len__(self) -> int:
        return len(self.records) + len(self.refused)


class RequestStream:
    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        group_id: str,
        codec: RecordCodec[RecRequest],
        exactly_once: bool,
        session_timeout_ms: int = 45_000,
    ) -> None:
        config = settings.client_config(**CONSUMER_DEFAULTS)
        config["group.id"] = group_id
        config["session.timeout.ms"] = session_timeout_ms
        config["heartbeat.interval.ms"] = max(1000, session_timeout_ms // 3)
        if exactly_once:
            # Never read another transaction's uncommitted output (relevant if chained).
            config["isolation.level"] = "read_committed"
        else:
            # Offsets are stored only after the batch's output is durable, and committed in
            # the background (and on close and rebalance). A synchronous commit from the
            # delivering thread waits while the polling thread sits in consume(): it cost
            # ~90 ms per batch at low load.
            config["enable.auto.commit"] = True
            config["enable.auto.offset.store"] = False
            config["auto.commit.interval.ms"] = AUTO_COMMIT_INTERVAL_MS
        self.consumer = Consumer(config)
        self._errors = ConsumerErrors(logger)
        self.consumer.subscribe(
            [topic], on_assign=_log_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )
        self.codec = codec
        self._to_store: queue.SimpleQueue[dict[tuple[str, int], int]] = queue.SimpleQueue()
        # Partitions taken away during the current poll (rebalance callbacks run inside
        # consume(), on the polling thread).
        self._revoked: set[tuple[str, int]] = set()

    def poll(
        self,
        max_records: int,
        window_s: float,
        gather_left: Callable[[], float] = lambda: 0.0,
    ) -> Polled:
        """Up to ``max_records``: what is waiting now, without waiting for more unless told.

        Adaptive batching: a request that finds the ranker idle leaves at once with
        whatever arrived with it, so a quiet worker adds no batching delay. While
        ``gather_left()`` is positive (seconds; the previous batch is still being scored,
        :mod:`inference.worker.gather`) the batch keeps growing with the backlog, since
        waiting costs nothing then and a bigger batch scores more cheaply per request.
        ``window_s`` > 0 adds a fixed wait after the first request (fuller batches at low
        load, at the cost of that much latency).
        """
        self._store_handed_offsets()
        self._revoked.clear()
        started = time.perf_counter()
        idle_s = 0.0
        messages = self.consumer.consume(max_records, timeout=0)
        if not messages:
            messages = self.consumer.consume(1, timeout=IDLE_WAIT_S)
            # Waiting for a first request is nobody's work: the worker's idle time.
            idle_s = time.perf_counter() - started
        received_ms = wall_clock_ms()
        if messages and len(messages) < max_records:
            messages += self.consumer.consume(max_records - len(messages), timeout=0)
        deadline = time.monotonic() + window_s
        while messages and len(messages) < max_records:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                remaining = min(gather_left(), GATHER_SLICE_S)
                if remaining <= 0:
                    break
            messages += self.consumer.consume(max_records - len(messages), timeout=remaining)
        if self._revoked:
            messages = self._without_revoked(messages)
        polled = Polled(idle_s=idle_s, received_ms=received_ms if messages else 0)
        decoding = time.perf_counter()
        for message in messages:
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise KafkaException(error)
                self._errors.seen(error)  # transient: librdkafka retries by itself
                polled.kafka_errors += 1
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if topic is not None and partition is not None and offset is not None:
                polled.offsets[(topic, partition)] = offset + 1
            try:
                polled.records.append((message, self.codec.decode(message.value() or b"")))
            except InvalidRecord as exc:
                polled.refused.append((message, exc))
        polled.decode_s = time.perf_counter() - decoding
        return polled

    def _without_revoked(self, messages: list[Any]) -> list[Any]:
        """Drop what the batch gathered from partitions revoked meanwhile.

        Their new owner reads them from the last commit. Kept, they would be answered
        twice, and in exactly-once mode their offsets committed under this member's new
        generation. A partition that came back within the gather is rewound to its first
        dropped message (its position moved past it), so nothing is skipped either.
        """
        kept: list[Any] = []
        rewind: dict[tuple[str, int], int] = {}
        for message in messages:
            where = (message.topic(), message.partition())
            if where not in self._revoked:
                kept.append(message)
            elif message.error() is None:
                rewind[where] = min(rewind.get(where, message.offset()), message.offset())
        owned = {(p.topic, p.partition) for p in self.consumer.assignment()}
        for (topic, partition), offset in rewind.items():
            if (topic, partition) in owned:
                self.consumer.seek(TopicPartition(topic, partition, offset))
        logger.info(
            "dropped %d gathered messages of revoked partitions %s",
            len(messages) - len(kept), sorted(p for _, p in self._revoked),
        )  # fmt: skip
        return kept

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        logger.info("revoked %s", [p.partition for p in partitions])
        self._revoked.update((p.topic, p.partition) for p in partitions)

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Hand exactly these offsets to the polling thread, which stores them for the next
        background commit (at-least-once).

        Any consumer call from another thread waits while the polling thread sits
        in ``consume()`` (measured: ~90 ms a batch), so offsets travel by a queue.
        """
        if offsets:
            self._to_store.put(dict(offsets))

    def _store_handed_offsets(self) -> None:
        while not self._to_store.empty():
            offsets = self._to_store.get_nowait()
            try:
                self.consumer.store_offsets(offsets=topic_partitions(offsets))
            except KafkaException as exc:
                # The partition moved away: its new owner re-reads from the last commit.
                logger.warning("offsets not stored (%s); the new owner replays", exc)

    def close(self) -> None:
        """Store the last offsets; closing commits them and leaves the group."""
        self._store_handed_offsets()
        self.consumer.close()


def _log_assign(_consumer: Any, partitions: list[TopicPartition]) -> None:
    logger.info("assigned %s", [p.partition for p in partitions])


class RecommendationSink:
    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        group_id: str,
        transactional_id: str | None,
        transaction_timeout_ms: int = 60_000,
        delivery_timeout_ms: int = 300_000,
    ) -> None:
        config = settings.client_config(
            **{
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 1,
                "compression.type": "lz4",
                "message.max.bytes": DEAD_LETTER_MAX_BYTES,
            }
        )
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        if transactional_id:
            config["transactional.id"] = transactional_id
            config["transaction.timeout.ms"] = transaction_timeout_ms
        else:
            # librdkafka retries a message this long (a broker restart), then fails it.
            config["message.timeout.ms"] = delivery_timeout_ms
        self.producer = Producer(config)
        self.topic = topic
        self.transactional = bool(transactional_id)
        if self.transactional:
            # Fences an earlier instance with the same id and aborts its open transaction.
            self.producer.init_transactions(30)
        self.dead_letters = DeadLetterPublisher(self.producer, consumer_name=group_id)
        self.codec = recommendation_codec()
        self._failures: list[str] = []
        self.clock = CallClock()  # the worker watches it for a call blocked for good

    def deliver(
        self,
        recommendations: Sequence[Recommendation],
        polled: Polled,
        stream: RequestStream,
    ) -> dict[str, float]:
        """Make the batch's output durable, then its offsets committed (or both atomically).

        Returns the seconds of its ``produce`` and ``commit`` stages: at least once,
        producing and flushing, then handing the offsets to the background commit;
        exactly once, producing into the transaction, then sending the offsets and
        committing it (which waits for the messages' delivery).
        """
        if self.transactional:
            return self._deliver_transaction(recommendations, polled, stream)
        started = time.perf_counter()
        self._produce(recommendations, polled)
        produced = time.perf_counter()
        remaining = self._flush_riding_out_outages()
        logger.debug(
            "produce %.1f ms, flush %.1f ms",
            (produced - started) * 1000, (time.perf_counter() - produced) * 1000,
        )  # fmt: skip
        if remaining or self._failures:
            failures, self._failures = self._failures, []
            raise DeliveryError(f"{remaining} undelivered, failures: {failures[:3]}")
        if polled.refused:
            self.dead_letters.flush()  # raises if a dead letter was lost
        durable = time.perf_counter()
        stream.commit(polled.offsets)
        return {"produce": durable - started, "commit": time.perf_counter() - durable}

    def _flush_riding_out_outages(self) -> int:
        """Wait for the batch's deliveries up to the delivery timeout; what is still queued.

        The producer retries by itself while brokers are away, so a broker restart
        costs waiting, not a crash; the worker stops only once Kafka has been gone for
        the whole delivery timeout (and its restart replays from the last commit).
        """
        give_up = time.monotonic() + self._delivery_timeout_s
        while True:
            left = max(give_up - time.monotonic(), 0.0)
            with self.clock.timing(min(FLUSH_SLICE_S, left)):
                remaining = int(self.producer.flush(min(FLUSH_SLICE_S, left)))
            if not remaining or time.monotonic() >= give_up:
                return remaining
            logger.warning("waiting for Kafka: %d messages undelivered", remaining)

    def _deliver_transaction(
        self, recommendations: Sequence[Recommendation], polled: Polled, stream: RequestStream
    ) -> dict[str, float]:
        """The batch in one transaction, redone from the start after an aborted try.

        A broker restart aborts a transaction (its messages time out, or the
        coordinator gives up on it); nothing of an aborted try is visible to
        read-committed readers and its offsets are not committed, so producing the
        same batch again in a new transaction is exactly-once. Retriable errors of a
        call are retried in place, as librdkafka requires (a commit that may have
        happened must not be aborted). Past the delivery timeout, or on a fatal error
        (fenced by a newer instance), the worker stops and its restart replays.
        """
        give_up = time.monotonic() + self._delivery_timeout_s
        seconds = {"produce": 0.0, "commit": 0.0}  # summed over the tries
        while True:
            try:
                self._one_transaction(recommendations, polled, stream, give_up, seconds)
                return seconds
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.txn_requires_abort() or time.monotonic() >= give_up:
                    raise DeliveryError(f"transaction failed: {error}") from exc
                logger.warning("transaction aborted (%s): producing the batch again", error)
                aborting = time.perf_counter()
                try:
                    self._retrying(self.producer.abort_transaction, give_up)
                except KafkaException as abort_exc:
                    # The abort itself can be fenced: a coordinator that timed the
                    # transaction out during an outage bumps the producer's epoch.
                    raise DeliveryError(
                        f"transaction failed: {error}; its abort failed: {abort_exc.args[0]}"
                    ) from abort_exc
                seconds["commit"] += time.perf_counter() - aborting

    def _one_transaction(
        self,
        recommendations: Sequence[Recommendation],
        polled: Polled,
        stream: RequestStream,
        give_up: float,
        seconds: dict[str, float],
    ) -> None:
        self._failures.clear()
        started = time.perf_counter()
        self.producer.begin_transaction()
        self._produce(recommendations, polled)
        committing = time.perf_counter()
        seconds["produce"] += committing - started
        offsets = topic_partitions(polled.offsets)
        if offsets:
            metadata = stream.consumer.consumer_group_metadata()
            self._retrying(
                lambda timeout: self.producer.send_offsets_to_transaction(
                    offsets, metadata, timeout
                ),
                give_up,
            )
        self._retrying(self.producer.commit_transaction, give_up)
        seconds["commit"] += time.perf_counter() - committing
        if self._failures:  # a committed transaction delivered everything: a bug if not
            raise DeliveryError(f"delivery failures: {self._failures[:3]}")

    def _retrying(self, call: Callable[[float], object], give_up: float) -> None:
        """``call(timeout)`` again while it fails with a retriable error, until ``give_up``."""
        while True:
            timeout = max(1.0, min(FLUSH_SLICE_S, give_up - time.monotonic()))
            try:
                with self.clock.timing(timeout):
                    call(timeout)
                return
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.retriable() or time.monotonic() >= give_up:
                    raise
                logger.warning("waiting for Kafka: %s", error)

    def _produce(self, recommendations: Sequence[Recommendation], polled: Polled) -> None:
        for message, error in polled.refused:
            self.dead_letters.publish(message, error)
        for rec in recommendations:
            self._send(self.codec.encode(rec), str(rec.user_id).encode())
        self.producer.poll(0)

    def _send(self, payload: bytes, key: bytes) -> None:
        while True:
            try:
                self.producer.produce(self.topic, payload, key=key, on_delivery=self._on_delivery)
                return
            except BufferError:
                # The local queue is full: serve delivery reports to make room.
                self.producer.poll(0.05)

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        # Purged messages are those of an aborted transaction, produced again after it.
        if err is not None and err.code() not in _PURGED:
            self._failures.append(str(err))

    def close(self) -> None:
        deadline = time.monotonic() + 10
        try:
            while self.producer.flush(1) and time.monotonic() < deadline:
                pass
        except KafkaException as exc:
            # A fatal producer (fenced, or its transaction timed out during an outage)
            # refuses even a flush; what it held is aborted, and the restart replays it.
            logger.warning("producer closed with a fatal error: %s", exc.args[0])
