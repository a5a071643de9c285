"""The demo's whole loop: features, the served ranker and the worker over the replayed stream.

The feature job, the feature writer and the worker run as child processes on
topics named for this run, while the replay feeds events and requests paced by
event time. When every request has its answer (or the wait runs out) the parts
are stopped with SIGTERM, as a deployment would stop them.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.demo.outcome import Answered, Asked
from jobs.demo.processes import Part
from jobs.localstack.process import port_in_use
from jobs.localstack.redis_acl import project_key_globs
from jobs.replay.producer import KeyedProducer, user_key
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import (
    KafkaSettings,
    TopicSpec,
    dead_letter_spec,
    ensure_topics,
    request_topic_spec,
)
from runtime.online.connect import connect
from runtime.online.redis_store import read_rows
from schemas.codec import event_codec, feature_update_codec, recommendation_codec, request_codec
from schemas.features import view_of
from schemas.records import BehaviorEvent
from schemas.topics import dead_letter_topic
from schemas.views import PROJECT

PARTITIONS = 4
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class RunTopics:
    """Every topic of one demo run, so runs never read each other's records."""

    events: str
    requests: str
    recommendations: str
    changelog: str

    @classmethod
    def for_run(cls, run_id: str) -> RunTopics:
        return cls(
            f"{run_id}.user-behavior",
            f"{run_id}.rec-requests",
            f"{run_id}.recommendations",
            f"{run_id}.features",
        )

    def create(self, kafka: KafkaSettings) -> None:
        specs = [TopicSpec(name, PARTITIONS) for name in (self.events, self.recommendations)]
        specs.append(request_topic_spec(self.requests, PARTITIONS))
        specs += [dead_letter_spec(dead_letter_topic(t)) for t in (self.events, self.requests)]
        ensure_topics(kafka, specs)


def run_project(run_id: str) -> str:
    """The Feast project (the Redis key namespace) of one demo run.

    The store outlives a run (the local stack's Redis keeps an append-only file), so under
    one shared project every run would read the rows earlier runs wrote: the replayed
    users' later clicks, features minutes old. A project of its own starts each run on an
    empty store, as its topics start it on empty logs.
    """
    return f"{PROJECT}_{run_id}".replace("-", "_").replace(".", "_")


# Keys asked for per SCAN, and removed per UNLINK, at the end of a run.
KEYS_PER_CALL = 1000


def drop_project_keys(redis_url: str, project: str) -> int:
    """Remove every key of ``project`` (see jobs.localstack.redis_acl); returns how many.

    Needs a principal that may SCAN (the admin on a secured stack).
    """
    with connect(redis_url) as client:
        globs = project_key_globs(project)
        keys = [key for glob in globs for key in client.scan_iter(glob, count=KEYS_PER_CALL)]
        for start in range(0, len(keys), KEYS_PER_CALL):
            client.unlink(*keys[start : start + KEYS_PER_CALL])
    return len(keys)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# The feature path's CPU priority on a box it shares with the request path: at the same
# priority the Flink job and the writer (1,500 events/s of windows) took the cores the
# worker, Kafka and Redis needed (request→answer p99 592 ms, 81 answers degraded by Redis
# timeouts; niced: none, p99 130-390 ms over six runs). Fresher features cannot help an
# answer that is late, and a click not yet in the store is folded in by the worker.
# SCHED_IDLE instead starved the features outright (no trigger ever reached the store in
# time) without a better p99 (283 ms).
FEATURE_PATH_NICENESS = 10


def part_group(run_group: str, part: str) -> str:
    """Each part's own consumer group under the run's name.

    Parts are separate applications: in one shared group the leader assigns every
    member's topics, and on a secured broker a leader that may not see another part's
    topic (the worker, the changelog) leaves that part with no partitions at all.
    """
    return f"{run_group}.{part}"


def feature_job_part(events: str, changelog: str, group: str, log_dir: Path) -> Part:
    """The Flink feature job from ``events`` to ``changelog`` (invalid events: its DLQ)."""
    args = ["--source-topic", events, "--changelog-topic", changelog,
            "--dead-letter-topic", dead_letter_topic(events),
            "--group-id", part_group(group, "features")]  # fmt: skip
    return Part("feature-job", "jobs.features", args, log_dir, niceness=FEATURE_PATH_NICENESS)


def writer_part(
    changelog: str,
    group: str,
    log_dir: Path,
    project: str | None = None,
    metrics_port: int = 0,
) -> Part:
    """The feature writer from ``changelog`` into Redis (``project``: its Feast namespace).

    ``metrics_port``: its /metrics; 0 (the default) serves none, so that runs of several
    writers, or of writers killed and restarted, never meet on one port.
    """
    args = ["--topic", changelog, "--group-id", part_group(group, "feature-writer"),
            "--metrics-port", str(metrics_port)]  # fmt: skip
    if project is not None:
        args += ["--project", project]
    return Part(
        "feature-writer",
        "jobs.feature_writer",
        args,
        log_dir,
        niceness=FEATURE_PATH_NICENESS,
    )


def pipeline_parts(
    topics: RunTopics,
    group: str,
    model_dir: Path,
    log_dir: Path,
    worker_metrics_port: int,
    writer_metrics_port: int = 0,
    project: str = PROJECT,
) -> list[Part]:
    """Feature job → feature writer → worker, each consuming what the one before produces.

    The writer writes, and the worker reads, the Feast ``project``'s keys.
    """
    return [
        feature_job_part(topics.events, topics.changelog, group, log_dir),
        writer_part(topics.changelog, group, log_dir, project, writer_metrics_port),
        Part(
            "worker",
            "inference.worker",
            [
                "--project",
                project,
                "--requests-topic",
                topics.requests,
                "--output-topic",
                topics.recommendations,
                "--group-id",
                part_group(group, "worker"),
                "--model-dir",
                str(model_dir),
                "--metrics-port",
                str(worker_metrics_port),
            ],
            log_dir,
        ),
    ]


def wait_ready(parts: list[Part], checks: Mapping[str, Callable[[], bool]]) -> None:
    """Wait until each part's readiness check passes; fail fast if a part dies."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = dict(checks)
    while pending:
        for part in parts:
            part.check()
        pending = {name: ok for name, ok in pending.items() if not ok()}
        if time.monotonic() > deadline:
            raise TimeoutError(f"not ready after {READY_TIMEOUT_S:.0f} s: {', '.join(pending)}")
        time.sleep(0.5)


def log_says(part: Part, marker: str) -> Callable[[], bool]:
    def check() -> bool:
        return part.log_path.exists() and marker in part.log_path.read_text(errors="replace")

    return check


def port_open(port: int) -> Callable[[], bool]:
    return lambda: port_in_use("127.0.0.1", port)


def wait_for_answers(
    kafka: KafkaSettings, topic: str, expected: int, parts: list[Part], timeout_s: float
) -> int:
    """Poll the output topic's end offsets until ``expected`` answers (or the timeout)."""
    deadline = time.monotonic() + timeout_s
    count = 0
    while time.monotonic() < deadline:
        for part in parts:
            part.check()
        count = sum(high_watermarks(kafka, topic).values())
        if count >= expected:
            break
        print(f"\ranswers {count}/{expected}", end="", file=sys.stderr, flush=True)
        time.sleep(1.0)
    print(f"\ranswers {count}/{expected}", file=sys.stderr)
    return count


def wait_until_quiet(
    kafka: KafkaSettings,
    topic: str,
    parts: list[Part],
    quiet_s: float = 5.0,
    timeout_s: float = READY_TIMEOUT_S,
) -> None:
    """Wait until ``topic``'s end offsets have not moved for ``quiet_s`` (or the timeout).

    Answers can all be in while the feature job still works through the stream
    (answers no longer wait for the feature path); stopping it then would cut
    the changelog short. Watermarks cost one request, unlike counting the rows.
    """
    deadline = time.monotonic() + timeout_s
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        for part in parts:
            part.check()
        ends = sum(high_watermarks(kafka, topic).values())
        if ends != last:
            last, still_since = ends, time.monotonic()
        elif time.monotonic() - still_since >= quiet_s:
            return
        time.sleep(0.5)
    print(f"{topic} still growing after {timeout_s:.0f} s", file=sys.stderr)


def read_asked(kafka: KafkaSettings, topic: str) -> list[Asked]:
    codec = request_codec()
    asked = []
    for message in read_range(kafka, topic, {}, high_watermarks(kafka, topic)):
        request = codec.decode(message.value())
        if request is not None:
            asked.append(Asked(request, message.timestamp()[1]))
    return asked


def read_answered(kafka: KafkaSettings, topic: str) -> list[Answered]:
    codec = recommendation_codec()
    return [
        Answered(codec.decode(message.value()), message.timestamp()[1])
        for message in read_range(kafka, topic, {}, high_watermarks(kafka, topic))
    ]


def part_environment(
    kafka: KafkaSettings, redis_url: str, extra: Mapping[str, str]
) -> dict[str, str]:
    return {
        **os.environ,
        **extra,
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMREC_REDIS_URL": redis_url,
    }


def changelog_counts(kafka: KafkaSettings, topic: str) -> Counter[str]:
    """Changelog rows per feature view."""
    codec = feature_update_codec()
    messages = read_range(kafka, topic, {}, high_watermarks(kafka, topic))
    return Counter(view_of(codec.decode(message.value())) for message in messages)


WARM_UP_USER = 999_000_000  # above every user id in the Taobao files
WARM_UP_INTERVAL_S = 1.0


def warm_up(
    kafka: KafkaSettings,
    redis_url: str,
    topic: str,
    at_ms: int,
    parts: list[Part],
    project: str = PROJECT,
) -> list[BehaviorEvent]:
    """Send probe clicks until one is readable from Redis: the feature path is then live.

    The probes carry the stream's first event time, so they do not move the
    watermark past the events still to come. Returns what was sent, which the
    ingest check then expects back.
    """
    producer = KeyedProducer(kafka)
    client = connect(redis_url)
    sent: list[BehaviorEvent] = []
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            for part in parts:
                part.check()
            probe = BehaviorEvent(WARM_UP_USER + len(sent), 1, 1, "pv", at_ms)
            producer.send(topic, user_key(probe.user_id), event_codec().encode(probe))
            producer.flush()
            sent.append(probe)
            time.sleep(WARM_UP_INTERVAL_S)
            users = [event.user_id for event in sent]
            if any(read_rows(client, "user_recent_clicks", users, ["item_ids"], project=project)):
                return sent
        raise TimeoutError(f"no probe click readable after {READY_TIMEOUT_S:.0f} s")
    finally:
        client.close()
