"""The loop's contract, with stand-ins for Kafka and Redis: commit only after Redis said yes."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import redis

from jobs.feature_writer.covisit import CovisitOptions
from jobs.feature_writer.loop import Backoff, FeatureWriterLoop
from jobs.feature_writer.rows import ConversionOptions
from runtime.online.redis_store import ScriptCall, WriteResult
from schemas.errors import InvalidRecord
from schemas.features import UserRecentEvents
from schemas.online.feast_format import FeatureRow
from tests.jobs.feature_writer.samples import T0, item_window, recent


class FakeDeadLetters:
    def __init__(self) -> None:
        self.published: list[tuple[Any, InvalidRecord]] = []
        self.counts: Counter[str] = Counter()  # by kind, as DeadLetterPublisher counts

    def publish(self, message: Any, error: InvalidRecord) -> None:
        self.published.append((message, error))
        self.counts[error.kind] += 1


class FakeConsumer:
    """Batches of one partition; ``committed`` holds each commit's next offset there."""

    def __init__(self, batches: list[list[tuple[Any, Any]]]) -> None:
        self.batches = batches
        self.polls = 0
        self.consumed = 0
        self.committed: list[int] = []
        self.dead_letters = FakeDeadLetters()

    @property
    def commits(self) -> int:
        return len(self.committed)

    def poll_batch(self, max_records: int = 500, timeout_s: float = 0.5) -> list[tuple[Any, Any]]:
        self.polls += 1
        batch = self.batches.pop(0) if self.batches else []
        self.consumed += len(batch)
        return batch

    def consumed_offsets(self) -> dict[tuple[str, int], int]:
        return {("changelog", 0): self.consumed} if self.consumed else {}

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        self.committed.append(offsets[("changelog", 0)])

    def close(self) -> None:
        pass


class FlakyWriter:
    """Fails ``failures`` times, then writes; records what it saw and when."""

    is_cluster = False  # one Redis: co-visit counts come as scripts

    def __init__(self, failures: int, consumer: FakeConsumer) -> None:
        self.failures = failures
        self.consumer = consumer
        self.commits_seen_at_success: list[int] = []
        self.rows: list[FeatureRow] = []
        self.also: list[list[ScriptCall]] = []

    def write(self, rows: list[FeatureRow], also: list[ScriptCall] | None = None) -> WriteResult:
        self.also.append(list(also or ()))
        if self.failures:
            self.failures -= 1
            raise redis.ConnectionError("Connection refused")
        self.commits_seen_at_success.append(self.consumer.commits)
        self.rows += rows
        return WriteResult(len(rows), 0, tuple(1 for _ in also or ()))


def make_loop(
    consumer: FakeConsumer,
    writer: FlakyWriter,
    stop: threading.Event | None = None,
    covisit: CovisitOptions | None = None,
    overlap: bool = True,
) -> FeatureWriterLoop:
    return FeatureWriterLoop(
        consumer,  # type: ignore[arg-type]
        writer,  # type: ignore[arg-type]
        ConversionOptions(),
        backoff=Backoff(initial_s=0.001, max_s=0.002),
        stop=stop,
        covisit=covisit,
        overlap=overlap,
    )


def write_batches(loop: FeatureWriterLoop, batches: int = 1) -> None:
    """``batches`` poll-write cycles, then the last write settled."""
    for _ in range(batches):
        loop.run_batch()
    loop.drain()


def test_backoff_doubles_up_to_the_cap() -> None:
    backoff = Backoff(initial_s=0.1, max_s=0.5)
    assert [backoff.delay(n) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.5, 0.5]


def test_retries_redis_and_commits_only_after_success() -> None:
    consumer = FakeConsumer([[("m1", recent(user_id=1)), ("m2", item_window())]])
    writer = FlakyWriter(failures=3, consumer=consumer)
    loop = make_loop(consumer, writer)
    assert loop.run_batch() == 2
    loop.drain()
    assert writer.commits_seen_at_success == [0]
    assert consumer.commits == 1
    assert loop.stats.redis_failures == 3
    assert (loop.stats.records, loop.stats.rows, loop.stats.written) == (2, 2, 2)


def test_stop_while_redis_is_down_leaves_the_batch_uncommitted() -> None:
    consumer = FakeConsumer([[("m1", recent(user_id=1))]])
    stop = threading.Event()
    writer = FlakyWriter(failures=10**9, consumer=consumer)
    loop = make_loop(consumer, writer, stop)
    timer = threading.Timer(0.05, stop.set)
    timer.start()
    stats = loop.run(max_seconds=10)
    timer.join()
    assert consumer.commits == 0
    assert stats.redis_failures > 0 and stats.written == 0


def test_unconvertible_update_is_dead_lettered_and_the_rest_written() -> None:
    broken = UserRecentEvents(user_id=9, latest_ts=T0, events=[f"{T0}:x:1:pv"])
    consumer = FakeConsumer([[("good", recent(user_id=1)), ("bad", broken)]])
    writer = FlakyWriter(failures=0, consumer=consumer)
    loop = make_loop(consumer, writer)
    write_batches(loop)
    [(message, error)] = consumer.dead_letters.published
    assert message == "bad" and error.kind == "schema"
    assert [row.entity_id for row in writer.rows] == [1]
    assert consumer.commits == 1


def test_run_stops_after_max_records() -> None:
    consumer = FakeConsumer([[("m", recent(user_id=n))] for n in range(1, 10)])
    loop = make_loop(consumer, FlakyWriter(0, consumer))
    assert loop.run(max_records=3).records == 3


def test_covisit_counts_ride_in_the_rows_write_and_retry_with_it() -> None:
    # Two clicks of user 1 in one batch: both are visits, though one row is written.
    consumer = FakeConsumer([[("m1", recent(user_id=1, n=1)), ("m2", recent(user_id=1, n=2))]])
    writer = FlakyWriter(failures=1, consumer=consumer)
    loop = make_loop(consumer, writer, covisit=CovisitOptions(project="p"))
    write_batches(loop)
    failed, written = writer.also
    assert failed == written and len(written) == 1
    assert written[0].keys[0] == b"p:covisit:seen:1"
    assert written[0].argv[5:] == [T0, 100, 0, T0, 100, 1, 101]  # after the five settings
    assert (len(writer.rows), loop.stats.covisits, consumer.commits) == (1, 1, 1)


def test_without_covisit_options_nothing_is_counted() -> None:
    consumer = FakeConsumer([[("m1", recent(user_id=1))]])
    writer = FlakyWriter(failures=0, consumer=consumer)
    write_batches(make_loop(consumer, writer))
    assert writer.also == [[]]


class HeldWriter(FlakyWriter):
    """Holds its n-th write until the loop has polled batch n + 1, or a second passed."""

    def __init__(self, consumer: FakeConsumer) -> None:
        super().__init__(0, consumer)
        self.next_polled_while_writing: list[bool] = []

    def write(self, rows: list[FeatureRow], also: list[ScriptCall] | None = None) -> WriteResult:
        next_poll = len(self.next_polled_while_writing) + 2
        deadline = time.monotonic() + 1.0  # a loaded box may poll late
        while self.consumer.polls < next_poll and time.monotonic() < deadline:
            time.sleep(0.001)
        self.next_polled_while_writing.append(self.consumer.polls >= next_poll)
        return super().write(rows, also)


def three_batches() -> FakeConsumer:
    return FakeConsumer([[("m", recent(user_id=n)), ("n", item_window(item_id=n))]
                         for n in (1, 2, 3)])  # fmt: skip


def test_overlapped_the_next_batch_is_polled_while_redis_writes() -> None:
    consumer = three_batches()
    writer = HeldWriter(consumer)
    write_batches(make_loop(consumer, writer), 3)
    # The last write had no next batch to overlap: the loop drained it.
    assert writer.next_polled_while_writing == [True, True, False]
    assert consumer.committed == [2, 4, 6]


def test_one_at_a_time_each_batch_is_committed_before_the_next_poll() -> None:
    consumer = three_batches()
    writer = HeldWriter(consumer)
    loop = make_loop(consumer, writer, overlap=False)
    loop.run_batch()
    assert consumer.committed == [2]  # settled within the cycle, nothing left in flight
    write_batches(loop, 2)
    assert writer.next_polled_while_writing == [False, False, False]
    assert writer.commits_seen_at_success == [0, 1, 2]


class GatedWriter(FlakyWriter):
    """Writes the first batch at once; holds the later ones until ``release`` is set."""

    def __init__(self, consumer: FakeConsumer) -> None:
        super().__init__(0, consumer)
        self.release = threading.Event()

    def write(self, rows: list[FeatureRow], also: list[ScriptCall] | None = None) -> WriteResult:
        if self.rows:
            self.release.wait(5)
        return super().write(rows, also)


def test_a_commit_never_covers_a_batch_still_in_flight() -> None:
    consumer = three_batches()
    writer = GatedWriter(consumer)
    loop = make_loop(consumer, writer)
    loop.run_batch()
    loop.run_batch()  # settles the first write; the second batch's stays in flight
    assert consumer.consumed == 4 and consumer.committed == [2]
    writer.release.set()
    loop.drain()
    assert consumer.committed == [2, 4]
    assert loop.stats.written == 4


def test_a_poll_of_only_dead_letters_is_committed() -> None:
    consumer = FakeConsumer([[("m", recent(user_id=1))], []])
    loop = make_loop(consumer, FlakyWriter(0, consumer))
    loop.run_batch()
    consumer.consumed += 1  # a record that went to the dead-letter topic at decoding
    write_batches(loop)
    assert consumer.committed == [1, 2]
    write_batches(loop)  # polled nothing new: nothing to commit
    assert consumer.committed == [1, 2]
