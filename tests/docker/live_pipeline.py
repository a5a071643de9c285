"""A slice of the pipeline with traffic and incidents, scraped by a real Prometheus.

The feature job (its mini-cluster's Flink metrics), the feature writer, the worker,
the drift watch and the outcome join run as the demo runs them (child processes on
topics of their own), against the session's Kafka and Redis and a Triton of this
run's own (the run pauses it). Prometheus scrapes every part and Triton each
:data:`SCRAPE_S`. The Taobao stream is replayed with its original 2017 timestamps,
as the demo does, so a latency measured from a payload time would read years.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

from inference.serving import repository
from jobs.demo.loop import (
    PARTITIONS,
    RunTopics,
    feature_job_part,
    log_says,
    part_environment,
    port_open,
    wait_ready,
    writer_part,
)
from jobs.demo.processes import Part, running
from jobs.demo.services import SERVED_MODEL
from jobs.localstack import Stack
from jobs.localstack.dashboard import Prometheus
from jobs.localstack.observe import wait_scraped
from jobs.localstack.process import read_pidfile
from jobs.localstack.prometheus_server import PrometheusService
from jobs.localstack.triton_server import TritonService
from jobs.replay.producer import user_key
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import LOG_APPEND_TIME, KafkaSettings, TopicSpec, ensure_topics
from schemas.codec import event_codec, recommendation_codec, wall_clock_ms
from schemas.records import BehaviorEvent
from tests.support.stacks import distinct_free_ports, own_stack_settings

SCRAPE_S = 1.0
EVENTS = 6_000  # about seven minutes of the stream's event time
SPEED = 25.0  # event time × speed: some 17 s of traffic
MALFORMED = 5
TRITON_PAUSE_S = 3.0
LATE_USER = 999_999_001  # above every user of the Taobao files


@dataclass
class Incidents:
    """Wall-clock times (unix seconds) at which the run injected each incident."""

    malformed_at: float = 0.0
    triton_paused_at: float = 0.0
    triton_resumed_at: float = 0.0


@dataclass
class LiveRun:
    prometheus: Prometheus
    kafka: KafkaSettings
    topics: RunTopics
    started: float
    ended: float = 0.0
    incidents: Incidents = field(default_factory=Incidents)


def part_ports() -> dict[str, int]:
    """Distinct metrics ports for the parts (the stack's own then avoids them: a drift
    watch once found its port taken)."""
    names = ("worker", "drift", "outcome", "features", "writer")
    return dict(zip(names, distinct_free_ports(len(names)), strict=True))


def pipeline(topics: RunTopics, run_id: str, model_dir: Path, log_dir: Path,
             ports: dict[str, int]) -> list[Part]:  # fmt: skip
    """The parts, each with its metrics on its own free port."""
    features = feature_job_part(topics.events, topics.changelog, run_id, log_dir)
    features.env["STREAMREC_FEATURES_METRICS_PORT"] = str(ports["features"])
    worker = Part("worker", "inference.worker", [
        "--requests-topic", topics.requests, "--output-topic", topics.recommendations,
        "--group-id", f"{run_id}.worker", "--model-dir", str(model_dir),
        "--metrics-port", str(ports["worker"]),
    ], log_dir, env={
        # A pause of Triton must show as timeouts within the run, not after it.
        "STREAMREC_WORKER_TRITON_TIMEOUT_MS": "300",
        "STREAMREC_WORKER_RETRY_AFTER_MS": "500",
    })  # fmt: skip
    drift = Part("drift", "jobs.drift", [
        "watch", "--features-topic", topics.changelog,
        "--recommendations-topic", topics.recommendations,
        "--alerts-topic", f"{run_id}.feature-drift", "--group-id", f"{run_id}.drift",
        "--reference", str(model_dir / "drift_reference.parquet"),
        "--reports-dir", str(log_dir / "drift-reports"),
        "--window-rows", "1500", "--min-rows", "1000", "--window-seconds", "0",
        "--metrics-port", str(ports["drift"]),
    ], log_dir)  # fmt: skip
    outcome = Part("outcome", "jobs.outcomes", [
        "--recommendations-topic", topics.recommendations, "--events-topic", topics.events,
        "--group-id", f"{run_id}.outcome", "--metrics-port", str(ports["outcome"]),
    ], log_dir)  # fmt: skip
    writer = writer_part(topics.changelog, run_id, log_dir, metrics_port=ports["writer"])
    return [features, writer, worker, drift, outcome]


@contextmanager
def observed_stack(home: Path, model_dir: Path, ports: dict[str, int]) -> Iterator[Stack]:
    """Triton serving ``model_dir`` and Prometheus scraping every part, on free ports."""
    models = home / "models"
    repository.publish(model_dir, models)
    settings = own_stack_settings(
        home,
        avoid_ports=set(ports.values()),
        triton_model_repository=models,
        prometheus_scrape_interval_s=SCRAPE_S,
    )
    environ = {
        "STREAMREC_WORKER_METRICS_PORT": str(ports["worker"]),
        "STREAMREC_DRIFT_METRICS_PORT": str(ports["drift"]),
        "STREAMREC_OUTCOME_METRICS_PORT": str(ports["outcome"]),
        "STREAMREC_FEATURES_METRICS_PORT": str(ports["features"]),
        "STREAMREC_FEATURE_WRITER_METRICS_PORT": str(ports["writer"]),
        "STREAMREC_CANARY_METRICS_PORT": "0",
    }
    stack = Stack(settings, [("triton", TritonService),
                             ("prometheus", lambda s: PrometheusService(s, environ))])  # fmt: skip
    stack.up(["triton", "prometheus"], timeout_s=180)
    try:
        yield stack
    finally:
        stack.down()


def send_malformed(kafka: KafkaSettings, topic: str) -> None:
    producer = Producer(kafka.client_config())
    for n in range(MALFORMED):
        producer.produce(topic, b"{not json " + str(n).encode(), key=b"1")
    producer.flush(10)


def judge_outcomes(kafka: KafkaSettings, topics: RunTopics) -> None:
    """Events in today's time: one user acts on an item answered to them (a hit), and an
    event two hours later moves the join's event-time clock past every horizon.

    The replay's events are from 2017 while answers are produced now, so the join (whose
    clock is event time) would judge nothing on the replay alone.
    """
    end = high_watermarks(kafka, topics.recommendations)
    codec = recommendation_codec()
    answers = [codec.decode(m.value()) for m in read_range(kafka, topics.recommendations, {}, end)]
    answered = next(a for a in answers if a.items)
    now = wall_clock_ms()
    acts = [
        BehaviorEvent(answered.user_id, answered.items[0].item_id, 1, "cart", now),
        BehaviorEvent(LATE_USER, 1, 1, "pv", now + 2 * 3_600_000),
    ]
    producer = Producer(kafka.client_config())
    for event in acts:
        producer.produce(topics.events, event_codec().encode(event), key=user_key(event.user_id))
    producer.flush(10)


def wait_for(prometheus: Prometheus, expr: str, timeout_s: float) -> None:
    """Until ``expr`` has a sample now (a first drift check, a first answer)."""
    deadline = time.monotonic() + timeout_s
    while not prometheus.query_range(expr, time.time(), time.time(), 1.0):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expr}: nothing after {timeout_s:.0f} s")
        time.sleep(SCRAPE_S)


def pause(pid: int, seconds: float) -> None:
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def live_run(
    kafka: KafkaSettings, redis_url: str, model_dir: Path, home: Path
) -> Iterator[LiveRun]:
    """Everything up and scraped, the replay and the incidents done; yields for reading."""
    run_id = f"live-{time.strftime('%H%M%S')}"
    topics = RunTopics.for_run(run_id)
    # Answers stamped by the broker too: the test measures append to append.
    ensure_topics(kafka, [TopicSpec(topics.recommendations, PARTITIONS, dict(LOG_APPEND_TIME))])
    topics.create(kafka)
    ports = part_ports()
    with observed_stack(home / "stack", model_dir, ports) as stack:
        settings = stack.settings
        env = part_environment(kafka, redis_url, {
            "STREAMREC_TRITON_URL": settings.triton_grpc_url,
            "STREAMREC_TRITON_MODEL": SERVED_MODEL,
            "STREAMREC_MODEL_DIR": str(model_dir),
        })  # fmt: skip
        parts = pipeline(topics, run_id, model_dir, home / "logs", ports)
        with running(parts, env):
            wait_ready(parts, {"feature job": log_says(parts[0], "job id"),
                               "feature writer": port_open(ports["writer"]),
                               "worker": port_open(ports["worker"])})  # fmt: skip
            service = stack.services["prometheus"]
            assert isinstance(service, PrometheusService)
            prometheus = Prometheus(service.endpoint())
            wait_scraped(prometheus, sum(map(len, service.targets().values())))
            run = LiveRun(prometheus, kafka, topics, started=time.time())
            triton_pid = read_pidfile(stack.services["triton"].pidfile)
            assert triton_pid is not None
            options = ReplayOptions(topic=topics.events, request_topic=topics.requests,
                                    request_rate=0.1, speed=SPEED, limit=EVENTS)  # fmt: skip
            replay = threading.Thread(target=run_replay, args=(options, kafka), daemon=True)
            replay.start()
            time.sleep(5 * SCRAPE_S)
            run.incidents.malformed_at = time.time()
            send_malformed(kafka, topics.requests)
            time.sleep(5 * SCRAPE_S)
            run.incidents.triton_paused_at = time.time()
            pause(triton_pid, TRITON_PAUSE_S)
            run.incidents.triton_resumed_at = time.time()
            replay.join(timeout=120)
            judge_outcomes(kafka, topics)
            # The drift watch starts slowest (Evidently) and judges whole windows.
            wait_for(prometheus, "streamrec_drift_last_check_timestamp_seconds > 0", 120)
            time.sleep(4 * SCRAPE_S)  # the last answers scraped
            for part in parts:
                part.check()
            run.ended = time.time()
            yield run
