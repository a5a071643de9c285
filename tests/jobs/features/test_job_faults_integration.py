"""Bad, out-of-order and late events; a kill and a restore from checkpoint."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest
from confluent_kafka import Producer

from jobs.datasets import RowAudit
from jobs.features.checkpoints import latest_checkpoint
from jobs.replay.run import ReplayOptions, replay_events, run_replay
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.features import FeatureUpdate
from schemas.records import BehaviorEvent
from schemas.reference import category_windows, item_windows, user_recent, user_windows
from tests.conftest import TopicFactory
from tests.jobs.features.harness import (
    ChangelogTail,
    changelog,
    dead_letters,
    kill,
    read_all,
    start,
)
from tests.jobs.features.test_job_integration import SPEC, as_set, topics_for
from tests.runtime.test_consumer_integration import BAD_INPUTS, EXPECTED_KIND
from tests.schemas.test_reference import MIN, T

pytestmark = pytest.mark.integration
# These tests follow single windows through the watermark, a kill and a restore: every
# window is written (the changed mode leaves out those equal to the one before).
EVERY_WINDOW = ["--window-mode", "every"]


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.5)


def send(producer: Producer, topic: str, payload: bytes, key: bytes = b"1") -> None:
    producer.produce(topic, payload, key=key)
    producer.flush(10)


def event(user: int, minutes: float, item: int = 10) -> bytes:
    return event_codec().encode(BehaviorEvent(user, item, 100, "pv", T + int(minutes * MIN)))


def has_window(kafka: KafkaSettings, topic: str, user: int, end: int) -> Callable[[], bool]:
    def check() -> bool:
        rows = changelog(kafka, topic)["user_window"]
        return any(row.user_id == user and row.window_end == end for row in rows)  # type: ignore[union-attr]

    return check


def has_recent_row(kafka: KafkaSettings, topic: str, user: int) -> Callable[[], bool]:
    def check() -> bool:
        rows = changelog(kafka, topic)["user_recent"]
        return any(row.user_id == user for row in rows)  # type: ignore[union-attr]

    return check


def test_bad_out_of_order_and_late_events(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topics = topics_for(topic_factory, partitions=1)
    job = start(kafka, topics, EVERY_WINDOW)
    producer = Producer(kafka.client_config())
    try:
        send(producer, topics.source, event(1, 0))
        for payload in BAD_INPUTS.values():  # the far-future one must not move the watermark
            send(producer, topics.source, payload)
        send(producer, topics.source, event(1, 10))
        send(producer, topics.source, event(1, 10 - 0.05))  # 3 s out of order: within 5 s
        send(producer, topics.source, event(99, 20), key=b"99")
        wait_until(has_recent_row(kafka, topics.changelog, 99), "the marker event")
        # The watermark has passed T + 15 min once user 1's window ending there fired
        # (a periodic watermark, every 200 ms): only then is the next event surely late.
        wait_until(has_window(kafka, topics.changelog, 1, T + 15 * MIN), "the watermark")
        late = event(1, 1, item=11)
        send(producer, topics.source, late)
        send(producer, topics.source, event(98, 21), key=b"98")
        wait_until(has_recent_row(kafka, topics.changelog, 98), "the second marker")
        wait_until(lambda: len(read_all(kafka, topics.dead_letters)) > len(BAD_INPUTS), "dlq")
        assert job.poll() is None, "the job keeps running through bad input"
    finally:
        kill(job, signal.SIGTERM)
    letters = dead_letters(kafka, topics.dead_letters)
    assert [letter.original for letter in letters] == [*BAD_INPUTS.values(), late]
    kinds = [letter.error_kind for letter in letters]
    assert kinds == [*(EXPECTED_KIND[name] for name in BAD_INPUTS), "late"]
    assert all(letter.error and letter.source_topic == topics.source for letter in letters)
    assert "behind the watermark" in letters[-1].error
    windows = {
        row.window_start: row  # type: ignore[union-attr]
        for row in changelog(kafka, topics.changelog)["user_window"]
        if row.user_id == 1  # type: ignore[union-attr]
    }
    # [T-15m, T+15m) fired: the events at T, T+10m and the out-of-order one, not the late one.
    assert windows[T - 15 * MIN].pv == 3  # type: ignore[union-attr]


def newest_checkpoint_after(checkpoints: Path, moment: float) -> Callable[[], bool]:
    def check() -> bool:
        found = latest_checkpoint(checkpoints)
        return found is not None and found.stat().st_mtime > moment

    return check


def all_windows_fired(
    tail: ChangelogTail, expected: dict[str, Sequence[FeatureUpdate]]
) -> Callable[[], bool]:
    def check() -> bool:
        tail.read()
        return all(len(tail.distinct[view]) >= len(rows) for view, rows in expected.items())

    return check


def sentinels(topic_partitions: int, after_ts: int) -> list[tuple[int, BehaviorEvent]]:
    """One event a day after the data in every partition: moves every watermark past the end."""
    return [
        (p, BehaviorEvent(900_000_000 + p, 1, 1, "pv", after_ts + 86_400_000))
        for p in range(topic_partitions)
    ]


# Parallelism 2: each operator's state is split over two subtasks by key group and
# restored to them; the run is `long` (make faults), as each subtask's state is its own.
@pytest.mark.parametrize(
    "parallelism", [1, pytest.param(2, marks=pytest.mark.long)], ids=["p1", "p2"]
)
def test_restore_from_checkpoint_after_a_kill(
    kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path, parallelism: int
) -> None:
    topics = topics_for(topic_factory, partitions=2)
    options = ReplayOptions(dataset="taobao-9days", topic=topics.source, sort_by_time=True,
                            loops=2)  # fmt: skip
    assert run_replay(options, kafka).ok
    events = list(replay_events(options, RowAudit()))
    checkpoints = tmp_path / "checkpoints"
    flags = ["--checkpoint-dir", str(checkpoints), "--checkpoint-interval-ms", "500",
             "--parallelism", str(parallelism), *EVERY_WINDOW]  # fmt: skip
    job = start(kafka, topics, flags)
    try:
        wait_until(lambda: len(read_all(kafka, topics.changelog)) > 1000, "first output")
        wait_until(newest_checkpoint_after(checkpoints, time.time()), "a mid-stream checkpoint")
    finally:
        kill(job)
    written_before = len(read_all(kafka, topics.changelog))
    producer = Producer(kafka.client_config())
    for partition, sentinel in sentinels(2, max(e.ts for e in events)):
        producer.produce(topics.source, event_codec().encode(sentinel),
                         key=str(sentinel.user_id).encode(), partition=partition)  # fmt: skip
    producer.flush(10)
    items = item_windows(events, SPEC)
    expected: dict[str, Sequence[FeatureUpdate]] = {
        "user_window": user_windows(events, SPEC),
        "item_window": items,
        "category_window": category_windows(items, SPEC),
    }
    restored = start(kafka, topics, [*flags, "--restore-from", "latest"])
    tail = ChangelogTail(kafka, topics.changelog)
    try:
        wait_until(all_windows_fired(tail, expected), "every window after the restore", 300)
    finally:
        kill(restored)
    views = tail.read()
    assert 0 < written_before < sum(len(rows) for rows in views.values())
    # At-least-once output: rows emitted after the checkpoint come again, identical,
    # so the distinct rows must equal an uninterrupted run's; a double-counted event
    # would show up as a row the reference does not have.
    for view, rows in expected.items():
        assert as_set(views[view]) == as_set(rows), view
    recent = [r for r in views["user_recent"] if r.user_id < 900_000_000]  # type: ignore[union-attr]
    assert distinct_per_user(recent) == distinct_per_user(user_recent(events, SPEC))


def distinct_per_user(rows: Sequence[FeatureUpdate]) -> dict[int, list[bytes]]:
    """Each user's rows in order, a repeat of an earlier row dropped."""
    per_user: dict[int, dict[bytes, None]] = {}
    for row in rows:
        per_user.setdefault(row.user_id, {})[msgspec.json.encode(row)] = None  # type: ignore[union-attr]
    return {user: list(seen) for user, seen in per_user.items()}


@pytest.mark.long
def test_events_late_before_a_kill_stay_late_after_the_restore(
    kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    """Flink checkpoints no watermark; the job's floor operator keeps it, so nothing re-fires."""
    topics = topics_for(topic_factory, partitions=1)
    checkpoints = tmp_path / "checkpoints"
    flags = ["--checkpoint-dir", str(checkpoints), "--checkpoint-interval-ms", "500",
             *EVERY_WINDOW]  # fmt: skip
    before = [(1, 0.0, 10), (1, 10.0, 10), (2, 20.0, 12), (99, 40.0, 10)]
    job = start(kafka, topics, flags)
    producer = Producer(kafka.client_config())
    try:
        for user, minutes, item in before:
            send(producer, topics.source, event(user, minutes, item), key=str(user).encode())
        # The watermark (T+40m - 5 s) has fired user 1's window ending at T+35m.
        wait_until(has_window(kafka, topics.changelog, 1, T + 35 * MIN), "the watermark")
        wait_until(newest_checkpoint_after(checkpoints, time.time()), "a checkpoint after it")
    finally:
        kill(job)
    late = [event(1, 1, item=11), event(3, 39)]  # behind T+40m - 5 s: late before the kill
    after = [(3, 45.0, 10), (900, 24 * 60.0, 1)]  # in time, and a day later to fire the rest
    for payload in late:
        send(producer, topics.source, payload, key=b"1")
    restored = start(kafka, topics, [*flags, "--restore-from", "latest"])
    try:
        for user, minutes, item in after:
            send(producer, topics.source, event(user, minutes, item), key=str(user).encode())
        good = [BehaviorEvent(u, i, 100, "pv", T + int(m * MIN)) for u, m, i in before + after]
        expected = [w for w in user_windows(good, SPEC) if w.user_id < 900]
        tail = ChangelogTail(kafka, topics.changelog)
        wait_until(all_windows_fired(tail, {"user_window": expected}), "the windows")
        rows = tail.read()["user_window"]
        windows = [w for w in rows if w.user_id < 900]  # type: ignore[union-attr]
        assert as_set(windows) == as_set(expected)  # no old window fired again for a late event
        wait_until(lambda: len(read_all(kafka, topics.dead_letters)) >= len(late), "dlq", 30)
    finally:
        kill(restored)
    letters = dead_letters(kafka, topics.dead_letters)
    assert [(letter.original, letter.error_kind) for letter in letters] == [
        (payload, "late") for payload in late
    ]
