"""Three KRaft brokers from the stack manager: every topic on three, and a broker killed
under a stream of writes loses no acknowledged record."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient

from jobs.localstack import Stack, StackSettings, process
from jobs.localstack.kafka_broker import KafkaService
from jobs.localstack.settings import HOST, KAFKA_NODE_PORT_STEP
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
BROKERS = 3
RECORDS = 6000


def free_port_ladder(rungs: int) -> int:
    """A port p with p + 100·n free for every rung n (each broker's offset)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            base: int = probe.getsockname()[1]
        ports = [base + KAFKA_NODE_PORT_STEP * n for n in range(rungs)]
        if max(ports) < 65536 and not any(process.port_in_use(HOST, p) for p in ports):
            return base
    raise RuntimeError("no free port ladder found")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    settings = StackSettings(
        home=tmp_path_factory.mktemp("replicated") / "home",
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")),
        kafka_port=free_port_ladder(BROKERS),
        kafka_controller_port=free_port_ladder(BROKERS),
        kafka_brokers=BROKERS,
        kafka_heap_mb=384,
    )
    local = Stack(settings, registry=[("kafka", KafkaService)])
    local.up(["kafka"])
    try:
        yield local
    finally:
        local.down(["kafka"])


def test_the_stack_starts_three_brokers_and_topics_get_three_replicas(cluster: Stack) -> None:
    assert list(cluster.services) == ["kafka-1", "kafka-2", "kafka-3"]
    kafka = KafkaSettings(cluster.settings.kafka_bootstrap)
    ensure_topics(kafka, [TopicSpec("replicated-check", 2)])
    metadata = AdminClient(kafka.client_config()).list_topics("replicated-check", timeout=10)
    assert sorted(metadata.brokers) == [1, 2, 3]
    partitions = metadata.topics["replicated-check"].partitions.values()
    assert [sorted(p.replicas) for p in partitions] == [[1, 2, 3], [1, 2, 3]]


def test_a_broker_killed_during_writes_loses_no_acknowledged_record(cluster: Stack) -> None:
    kafka = KafkaSettings(cluster.settings.kafka_bootstrap)
    topic = "replicated-writes"
    ensure_topics(kafka, [TopicSpec(topic, 1)])
    leader = AdminClient(kafka.client_config()).list_topics(topic, timeout=10)
    victim = cluster.services[f"kafka-{leader.topics[topic].partitions[0].leader}"]
    producer = Producer(
        kafka.client_config(**{"enable.idempotence": True, "linger.ms": 2, "acks": "all"})
    )
    acknowledged: list[bytes] = []
    failed: list[str] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is None:
            acknowledged.append(message.value() or b"")
        else:
            failed.append(str(error))

    killed = threading.Event()
    for n in range(RECORDS):
        producer.produce(topic, f"{n}".encode(), on_delivery=delivered)
        producer.poll(0)
        if n == RECORDS // 3:
            producer.flush(30)
            # The partition's leader dies mid-stream, without a clean shutdown.
            pid = process.running_pid(victim.pidfile, victim.marker)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed.set()
        time.sleep(0.0005)
    assert producer.flush(120) == 0
    assert killed.is_set() and not failed
    assert len(acknowledged) == RECORDS
    read = read_all(kafka, topic, RECORDS)
    # Every acknowledged record is there once, in the order it was written.
    assert read == [f"{n}".encode() for n in range(RECORDS)]
    new_leader = AdminClient(kafka.client_config()).list_topics(topic, timeout=10)
    assert new_leader.topics[topic].partitions[0].leader != int(victim.name.split("-")[1])
    cluster.up(["kafka"])  # the killed broker comes back and catches up


def read_all(kafka: KafkaSettings, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        kafka.client_config(
            **{"group.id": f"check-{time.time_ns()}", "auto.offset.reset": "earliest"}
        )
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    return values
