"""A Kafka broker restarted under a stream of requests: the worker rides through it.

The broker is this module's own (it gets stopped); Redis and Triton are the session's.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from jobs.localstack import Stack, StackSettings
from runtime.kafka import EXIT_RESTART, KafkaSettings
from schemas.codec import request_codec
from schemas.records import RecRequest
from tests.conftest import REPO_ROOT, TritonServer, free_port
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerProcess, WorkerTopics
from tests.inference.worker.world import World

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
RATE_PER_S = 50
OUTAGE_S = 20


@pytest.fixture
def own_kafka(tmp_path: Path) -> Iterator[tuple[Stack, KafkaSettings]]:
    settings = StackSettings(
        home=tmp_path / "home",
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")),
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
    )
    local = Stack(settings)
    local.up(["kafka"])
    try:
        yield local, KafkaSettings(bootstrap_servers=settings.kafka_bootstrap)
    finally:
        local.down(["kafka"])


class RequestStreamer(threading.Thread):
    """Produces requests with unique ids at a steady rate until stopped (the producer
    buffers them while the broker is away).

    Idempotent, as a request producer should be: without it a produce whose reply
    was lost in the broker's shutdown is retried and the request stands twice on
    the topic, and each copy is rightly answered (seen once in five runs).
    """

    def __init__(self, kafka: KafkaSettings, topic: str, users: list[int]) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            kafka.client_config(**{"linger.ms": 5, "enable.idempotence": True})
        )
        self.topic, self.users = topic, users
        self.sent: list[str] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        codec = request_codec()
        while not self._stopping.wait(1 / RATE_PER_S):
            n = len(self.sent)
            user = self.users[n % len(self.users)]
            request = RecRequest(request_id=f"r{n}", user_id=user, ts=int(time.time() * 1000), k=5)
            self.producer.produce(self.topic, codec.encode(request), key=str(user).encode())
            self.producer.poll(0)
            self.sent.append(request.request_id)

    def stop(self) -> list[str]:
        self._stopping.set()
        self.join()
        assert self.producer.flush(120) == 0
        return self.sent


@dataclass
class Outcome:
    sent: list[str]
    requested: Counter[str]  # request ids as they stand on the requests topic
    answered: Counter[str]
    restarts: int  # exits for a restart (EXIT_RESTART) that the test, as a supervisor, answered


def ride_out_a_restart(
    own_kafka: tuple[Stack, KafkaSettings],
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
    **worker: str,
) -> Outcome:
    local, kafka = own_kafka
    topics = WorkerTopics.create(kafka, partitions=2)

    def start() -> WorkerProcess:
        return start_worker(
            topics, kafka_at=kafka, triton=(triton.grpc_url, triton.model), max_candidates="30",
            triton_timeout_ms="20000", delivery_timeout_ms="45000", **worker,
        )  # fmt: skip

    process = start()
    reader = OutputReader(kafka, topics.output, read_committed=True)
    streamer = RequestStreamer(kafka, topics.requests, world.users)
    streamer.start()
    restarts = 0
    try:
        reader.read_until(RATE_PER_S, timeout_s=120)  # answering before the fault
        local.down(["kafka"])  # SIGTERM: a clean broker shutdown
        time.sleep(OUTAGE_S)
        local.up(["kafka"])
        time.sleep(5)
        sent = streamer.stop()
        deadline = time.monotonic() + 300
        while len(reader.raw) < len(sent) and time.monotonic() < deadline:
            reader.settle(1)
            if process.process.poll() is not None:
                assert process.process.returncode == EXIT_RESTART, process.output()[-3000:]
                restarts += 1
                process = start()
        reader.settle(5)
        assert process.process.poll() is None, process.output()[-3000:]
        answered = Counter(r.request_id for r in reader.recommendations())
        return Outcome(
            sent, requests_on_the_topic(kafka, topics.requests, len(sent)), answered, restarts
        )
    finally:
        reader.close()


def requests_on_the_topic(kafka: KafkaSettings, topic: str, at_least: int) -> Counter[str]:
    requests = OutputReader(kafka, topic)
    try:
        raw = requests.read_until(at_least, timeout_s=60, settle_s=2)
    finally:
        requests.close()
    codec = request_codec()
    return Counter(codec.decode(value).request_id for value in raw)


@pytest.mark.long
def test_a_broker_restart_loses_no_request_and_stops_no_worker_at_least_once(
    own_kafka: tuple[Stack, KafkaSettings],
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
) -> None:
    outcome = ride_out_a_restart(own_kafka, triton, world, start_worker)
    assert set(outcome.requested) == set(outcome.sent)
    assert set(outcome.answered) == set(outcome.sent)
    assert outcome.restarts == 0


@pytest.mark.long
def test_a_broker_restart_duplicates_nothing_exactly_once(
    own_kafka: tuple[Stack, KafkaSettings],
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
    tmp_path: Path,
) -> None:
    """librdkafka can block a transactional call for good after the broker's return
    (issues 5456, 5511): the worker then exits for a restart, at most once here, and
    the restart under the same transactional id keeps every answer exactly once."""
    outcome = ride_out_a_restart(
        own_kafka, triton, world, start_worker,
        exactly_once="true", instance_lock_dir=str(tmp_path / "slots"),
    )  # fmt: skip
    # Each request stands once on its topic, and is answered once.
    assert outcome.requested == Counter(outcome.sent), outcome.requested.most_common(3)
    assert outcome.answered == outcome.requested, outcome.answered.most_common(3)
    assert outcome.restarts <= 1
