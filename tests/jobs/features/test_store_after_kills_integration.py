"""Kill -9 of the feature job (its TaskManager: the mini-cluster is one process) and of
the feature writer, each restarted: the online store equals an uninterrupted run's.

Two copies of one event stream on separate topics: copy A goes through the job and
the writer without a fault, copy B through a job killed after a checkpoint and
restored, then a writer killed mid-stream and restarted. Each writes its own Feast
project in one Redis; the two stores are compared key by key, values included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from jobs.datasets import RowAudit
from jobs.feature_writer.covisit import NEIGHBOURS
from jobs.replay.run import ReplayOptions, replay_events, run_replay
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient, connect
from schemas.codec import event_codec
from tests.conftest import REPO_ROOT, Endpoints, TopicFactory
from tests.jobs.features.harness import JobTopics, changelog, kill, read_all, start
from tests.jobs.features.test_job_faults_integration import (
    newest_checkpoint_after,
    sentinels,
    wait_until,
)
from tests.jobs.features.test_job_integration import as_set, topics_for
from tests.support import requirements

# Two Flink runs and three writers: minutes, so it runs with make faults, not make test.
pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(1200)]
PARTITIONS = 2


def stream_into(kafka: KafkaSettings, topics: JobTopics) -> None:
    """The sorted Taobao stream, then a sentinel a day later in every partition (so
    every window fires, and a bounded run and a restored one end at the same place)."""
    options = ReplayOptions(dataset="taobao-9days", topic=topics.source, sort_by_time=True,
                            loops=2)  # fmt: skip
    assert run_replay(options, kafka).ok
    last = max(event.ts for event in replay_events(options, RowAudit()))
    producer = Producer(kafka.client_config())
    for partition, sentinel in sentinels(PARTITIONS, last):
        producer.produce(topics.source, event_codec().encode(sentinel),
                         key=str(sentinel.user_id).encode(), partition=partition)  # fmt: skip
    assert producer.flush(10) == 0


def writer(
    kafka: KafkaSettings, redis_url: str, topic: str, project: str, log: Path, *extra: str
) -> subprocess.Popen[str]:
    """The writer in its own process group, its output in ``log`` (a pipe nobody reads
    would fill and stall it)."""
    env = {
        **os.environ,
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMREC_REDIS_URL": redis_url,
        "STREAMREC_FEATURE_WRITER_PROJECT": project,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.feature_writer", "--topic", topic, "--group-id", topic,
         *extra],
        cwd=REPO_ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


# The fresh view's rows carry the writer's clock, not an event time (so that the last
# one written wins: jobs/feature_writer/rows.py): equal runs differ there by design.
WRITE_CLOCK_FIELDS = {b"_ts:user_recent_clicks"}
FRESH_VIEW = "user_recent"


def store(client: OnlineClient, project: str) -> dict[bytes, object]:
    """Every key of ``project`` (the project's name cut out of it) with its value, the
    fields that hold the writer's clock left out."""
    name = project.encode()
    dumped: dict[bytes, object] = {}
    for key in client.scan_iter(count=5000):
        if not (key.endswith(name) or key.startswith(name + b":")):
            continue
        kind = client.type(key)
        value: object
        if kind == b"hash":
            fields: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
            value = {f: v for f, v in fields.items() if f not in WRITE_CLOCK_FIELDS}
        elif kind == b"zset":
            members: list[Any] = client.zrange(key, 0, -1, withscores=True)  # type: ignore[assignment]
            # A full co-visitation set is cut to its best members after each update, and a
            # member cut earlier starts again from 1 (jobs/feature_writer/covisit.py): its
            # counts depend on how two users' rows interleave, which two runs do not share.
            value = "full" if len(members) >= NEIGHBOURS else members
        else:
            value = client.get(key) if kind == b"string" else kind
        dumped[key.replace(name, b"<project>")] = value
    return dumped


def quiet(kafka: KafkaSettings, topic: str, for_s: float = 15) -> Callable[[], bool]:
    """True once ``topic`` has records and has not grown for ``for_s``."""
    seen = {"count": -1, "since": time.monotonic()}

    def check() -> bool:
        count = len(read_all(kafka, topic))
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return count > 0 and time.monotonic() - seen["since"] >= for_s

    return check


def differences(want: dict[bytes, object], got: dict[bytes, object]) -> str:
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    changed = [k for k in want if k in got and want[k] != got[k]]
    first = ""
    if changed:
        first = f"; first changed: {changed[0]!r}: {want[changed[0]]!r} != {got[changed[0]]!r}"
        a, b = want[changed[0]], got[changed[0]]
        if isinstance(a, dict) and isinstance(b, dict):
            first = "; first change: " + ", ".join(
                f"{f!r}: {a.get(f)!r} != {b.get(f)!r}" for f in sorted(a.keys() | b.keys())
                if a.get(f) != b.get(f)
            )  # fmt: skip
    return (f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} extra (e.g. "
            f"{extra[:3]}), {len(changed)} of {len(want)} changed{first}")  # fmt: skip


def test_kills_of_the_job_and_the_writer_leave_the_store_an_uninterrupted_run_builds(
    kafka: KafkaSettings, stack: Endpoints, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    requirements.dataset("taobao")
    redis_url = requirements.redis_url(stack.redis_url)
    client = connect(redis_url)
    calm, faulty = topics_for(topic_factory, PARTITIONS), topics_for(topic_factory, PARTITIONS)
    for topics in (calm, faulty):
        stream_into(kafka, topics)
    calm_project, faulty_project = (f"s{uuid.uuid4().hex[:8]}" for _ in range(2))

    # Streaming, as the faulty run is: a bounded run would also fire the sentinels' own
    # windows at the end of input, which a streaming job never does.
    calm_job = start(kafka, calm)
    try:
        wait_until(quiet(kafka, calm.changelog), "the calm job's last window", timeout_s=300)
    finally:
        kill(calm_job, signal.SIGTERM)
    calm_fresh = changelog(kafka, calm.changelog)[FRESH_VIEW]
    records = len(read_all(kafka, calm.changelog))
    log = tmp_path / "writers.log"
    calm_writer = writer(kafka, redis_url, calm.changelog, calm_project, log,
                         "--max-records", str(records))  # fmt: skip
    assert calm_writer.wait(300) == 0, log.read_text()[-3000:]
    calm_store = store(client, calm_project)

    checkpoints = tmp_path / "checkpoints"
    flags = ["--checkpoint-dir", str(checkpoints), "--checkpoint-interval-ms", "500"]
    job = start(kafka, faulty, flags)
    try:
        wait_until(lambda: len(read_all(kafka, faulty.changelog)) > 1000, "first output")
        wait_until(newest_checkpoint_after(checkpoints, time.time()), "a mid-stream checkpoint")
    finally:
        kill(job)  # SIGKILL of the job's process group: its TaskManager goes with it
    restored = start(kafka, faulty, [*flags, "--restore-from", "latest"])
    try:
        # The fresh view writes one row per event read, the same in every run: the restored
        # job has read the whole stream once it has written all of the calm run's. Which
        # window rows a run writes depends on how far each watermark advance reaches (the
        # changed mode writes only the newest change point of each), so those are compared
        # in the store, which holds the same for any advances, once the output stops.
        def caught_up() -> bool:
            rows = changelog(kafka, faulty.changelog).get(FRESH_VIEW, [])
            return as_set(rows) >= as_set(calm_fresh)

        wait_until(caught_up, "the restored job's fresh rows", timeout_s=300)
        wait_until(quiet(kafka, faulty.changelog), "the restored job's last window", 300)
    finally:
        kill(restored, signal.SIGTERM)

    first = writer(kafka, redis_url, faulty.changelog, faulty_project, log)
    try:
        wait_until(lambda: len(store(client, faulty_project)) > 500, "the writer's first rows")
    finally:
        kill(first)  # SIGKILL mid-stream: offsets of the batch in hand uncommitted
    # The restore read the events after its checkpoint again.
    assert len(changelog(kafka, faulty.changelog)[FRESH_VIEW]) > len(calm_fresh)
    second = writer(kafka, redis_url, faulty.changelog, faulty_project, log)
    try:
        deadline = time.monotonic() + 300
        while (got := store(client, faulty_project)) != calm_store:
            assert time.monotonic() < deadline, differences(calm_store, got)
            time.sleep(2)
    finally:
        kill(second, signal.SIGTERM)
        client.close()
