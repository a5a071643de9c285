"""The writer's loop: poll a batch, coalesce, convert, one Redis pipeline, then commit.

Offsets are committed only after Redis acknowledged the batch (at-least-once;
the upserts are idempotent, so a replay rewrites the same rows). The batch's
co-visitation counts (:mod:`jobs.feature_writer.covisit`) go in the same
pipeline and are idempotent too. While Redis is unreachable the same batch is
retried with capped exponential backoff, nothing is committed, and the loop
carries on once Redis answers again.

Overlapped writes (``overlap=True``, the default): one batch's Redis pipeline runs
on a thread of its own while the loop polls and converts the next one. Half the
writer's time was spent waiting for Redis's reply (an fsync per pipeline with
``appendfsync always``), with nothing else to do. At most one write is in flight;
a batch's offsets are a snapshot taken right after its poll
(:meth:`RecordConsumer.consumed_offsets`), committed once Redis acknowledged that
batch and every batch before it, so a commit never covers a record polled since.
``overlap=False`` writes and commits each batch before polling the next.

The counts the loop keeps (:class:`WriterStats`, its progress line) are Prometheus
counters too (:mod:`jobs.feature_writer.metrics`): :meth:`FeatureWriterLoop._count`
adds to both at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import redis
from confluent_kafka import KafkaException

from jobs.feature_writer.covisit import CovisitOptions, batch_visits, count_calls
from jobs.feature_writer.errors import WriterStopped
from jobs.feature_writer.metrics import WriterMetrics
from jobs.feature_writer.rows import ConversionOptions, convert_batch
from runtime.consumer import Offsets, RecordConsumer
from runtime.online.redis_store import GuardedCalls, OnlineStoreWriter, ScriptCall, WriteResult
from schemas.errors import SchemaViolation
from schemas.features import FeatureUpdate, UserRecentEvents
from schemas.online.feast_format import FeatureRow

logger = logging.getLogger(__name__)
STATS_EVERY_S = 10.0


def event_time_ms(update: FeatureUpdate) -> int:
    """A changelog record's event time: the user's latest click, or the window's end.

    Not a row's Feast timestamp: the fresh view's rows carry the writer's clock.
    """
    return update.latest_ts if isinstance(update, UserRecentEvents) else update.window_end


@dataclass(frozen=True)
class Backoff:
    """Capped exponential delays between Redis retries."""

    initial_s: float = 0.1
    max_s: float = 5.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_s, self.initial_s * 2 ** max(0, attempt - 1)))


@dataclass(frozen=True)
class InFlight:
    """A batch handed to Redis: its write, and what to commit and count once it is done."""

    write: Future[WriteResult]
    offsets: Offsets
    batch: Sequence[tuple[Any, FeatureUpdate]]


@dataclass
class WriterStats:
    records: int = 0  # valid changelog records consumed
    rows: int = 0  # rows sent to Redis after coalescing
    written: int = 0
    stale: int = 0  # not written: Redis held a row at least as new
    bad_rows: int = 0  # records that decoded but could not be converted (dead-lettered)
    covisits: int = 0  # fresh clicks whose co-visits were counted (not already counted)
    batches: int = 0
    redis_failures: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return (
            f"records={self.records} ({self.records / elapsed:,.0f}/s) rows={self.rows} "
            f"written={self.written} stale={self.stale} bad={self.bad_rows} "
            f"covisits={self.covisits} "
            f"batches={self.batches} redis_failures={self.redis_failures}"
        )


class FeatureWriterLoop:
    """Drives one :class:`RecordConsumer` of :data:`FeatureUpdate` into the online store."""

    def __init__(
        self,
        consumer: RecordConsumer[Any],
        writer: OnlineStoreWriter,
        options: ConversionOptions,
        *,
        batch_size: int = 2000,
        batch_timeout_s: float = 0.2,
        stop: threading.Event | None = None,
        backoff: Backoff = Backoff(),
        covisit: CovisitOptions | None = None,
        metrics: WriterMetrics | None = None,
        overlap: bool = True,
    ) -> None:
        self._consumer = consumer
        self._writer = writer
        self._options = options
        self._batch_size = batch_size
        self._batch_timeout_s = batch_timeout_s
        self.stop = stop or threading.Event()
        self._backoff = backoff
        self._covisit = covisit
        self.stats = WriterStats()
        self.metrics = metrics or WriterMetrics()
        self._dead_letters_seen: dict[str, int] = {}
        self._newest_event_ms = 0
        self._overlap = overlap
        self._redis_thread = ThreadPoolExecutor(1, thread_name_prefix="redis-write")
        self._in_flight: InFlight | None = None
        self._offsets_polled: Offsets = {}

    def run(self, max_records: int | None = None, max_seconds: float | None = None) -> WriterStats:
        """Loop until stopped, or until ``max_records`` / ``max_seconds`` (for tests, benches)."""
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        next_report = time.monotonic() + STATS_EVERY_S
        try:
            while not self.stop.is_set():
                self.run_batch()
                now = time.monotonic()
                if max_records is not None and self.stats.records >= max_records:
                    break
                if deadline is not None and now >= deadline:
                    break
                if now >= next_report:
                    logger.info("progress: %s", self.stats.line())
                    next_report = now + STATS_EVERY_S
            self.drain()
        except WriterStopped as stopped:
            logger.warning("%s", stopped)
        logger.info("stopped: %s", self.stats.line())
        return self.stats

    def run_batch(self) -> int:
        """Poll and convert a batch, settle the write in flight, then write this one;
        returns the number of valid records polled. Overlapped, this batch's write is
        left in flight (:meth:`drain` settles it); otherwise it is settled here too."""
        batch = self._consumer.poll_batch(self._batch_size, self._batch_timeout_s)
        offsets = self._consumer.consumed_offsets()
        # A poll of nothing but dead letters consumed records too: their offsets move.
        consumed = offsets != self._offsets_polled
        self._offsets_polled = offsets
        rows = self._convert(batch)
        counts = self._covisit_calls(batch)
        self._export_dead_letters()
        self._count(records=len(batch), rows=len(rows), batches=1 if batch else 0)
        if batch:
            self.metrics.batch_size.observe(len(batch))
        previous, self._in_flight = self._in_flight, None
        if previous is not None:
            previous.write.result()  # one write at a time, in order; raises WriterStopped
        if consumed:
            self._in_flight = InFlight(self._start_write(rows, counts), offsets, batch)
        if previous is not None:
            # Committed while this batch's pipeline runs: the commit's round trip
            # overlaps Redis too.
            self._settle(previous)
        if not self._overlap:
            self.drain()
        return len(batch)

    def drain(self) -> None:
        """Wait for the write in flight, count it and commit its offsets; raises
        :class:`WriterStopped` when a stop came while Redis was failing (uncommitted)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            self._settle(in_flight)

    def _start_write(
        self, rows: list[FeatureRow], counts: list[ScriptCall] | GuardedCalls
    ) -> Future[WriteResult]:
        if not rows and not counts:
            done: Future[WriteResult] = Future()
            done.set_result(WriteResult(0, 0))
            return done
        return self._redis_thread.submit(self._write_until_done, rows, counts)

    def _settle(self, in_flight: InFlight) -> None:
        """Count a finished write and commit its batch's offsets."""
        result = in_flight.write.result()
        covisits = sum(int(reply) for reply in result.also)
        self._count(written=result.written, stale=result.skipped_stale, covisits=covisits)
        self._note_newest(in_flight.batch)
        self._commit(in_flight.offsets)

    def close(self) -> None:
        """Leave the consumer group; uncommitted records go to the next owner."""
        self._redis_thread.shutdown(wait=True)
        self._consumer.close()

    def _count(self, **added: int) -> None:
        """Add to :attr:`stats` fields and to their exported counters in one step."""
        for name, amount in added.items():
            setattr(self.stats, name, getattr(self.stats, name) + amount)
            self.metrics.stat_counters[name].inc(amount)

    def _note_newest(self, batch: Sequence[tuple[Any, FeatureUpdate]]) -> None:
        """The newest event time of a batch Redis took, kept if newer than any before."""
        newest = max((event_time_ms(update) for _message, update in batch), default=0)
        if newest > self._newest_event_ms:
            self._newest_event_ms = newest
            self.metrics.newest_event.set(newest / 1000)

    def _export_dead_letters(self) -> None:
        """Bring the dead-letter counter up to the publisher's counts (records refused
        at decoding or not convertible)."""
        for kind, count in self._consumer.dead_letters.counts.items():
            new = count - self._dead_letters_seen.get(kind, 0)
            if new > 0:
                self.metrics.dead_letters.labels(kind).inc(new)
                self._dead_letters_seen[kind] = count

    def _convert(self, batch: Sequence[tuple[Any, FeatureUpdate]]) -> list[FeatureRow]:
        rows, failed = convert_batch(batch, self._options)
        for message, update, exc in failed:
            # Decodes, but a packed sequence or trend string is broken: bad input is data.
            self._consumer.dead_letters.publish(
                message, SchemaViolation(f"cannot convert {type(update).__name__}: {exc}")
            )
            self._count(bad_rows=1)
        return rows

    def _covisit_calls(
        self, batch: Sequence[tuple[Any, FeatureUpdate]]
    ) -> list[ScriptCall] | GuardedCalls:
        if self._covisit is None:
            return []
        visits = batch_visits(batch, self._covisit.window_ms)
        return count_calls(visits, self._covisit, cluster=self._writer.is_cluster)

    def _write_until_done(
        self, rows: Sequence[FeatureRow], also: Sequence[ScriptCall] | GuardedCalls = ()
    ) -> WriteResult:
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                result = self._writer.write(rows, also)
            except redis.RedisError as exc:
                attempt += 1
                self._count(redis_failures=1)
                delay = self._backoff.delay(attempt)
                logger.error(
                    "Redis write failed (attempt %d: %s: %s); %d rows stay uncommitted, "
                    "retrying in %.1f s",
                    attempt, type(exc).__name__, exc, len(rows), delay,
                )  # fmt: skip
                if self.stop.wait(delay):
                    raise WriterStopped(
                        f"stop requested while Redis was failing; {len(rows)} rows not "
                        "committed, they will be consumed again"
                    ) from exc
                continue
            self.metrics.write_seconds.observe(time.perf_counter() - started)
            if attempt:
                logger.warning("Redis is back after %d failed attempts", attempt)
            return result

    def _commit(self, offsets: Offsets) -> None:
        """Commit a settled batch's offsets (a snapshot taken when it was polled)."""
        started = time.perf_counter()
        try:
            self._consumer.commit(offsets)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is None or not hasattr(error, "fatal") or error.fatal():
                raise
            # Typically a rebalance while we waited for Redis: the partitions moved,
            # whoever owns them now replays from the last commit (idempotent upserts).
            logger.warning("offsets not committed (%s); the records will be consumed again", error)
        self.metrics.commit_seconds.observe(time.perf_counter() - started)
