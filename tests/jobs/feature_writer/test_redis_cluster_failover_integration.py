"""A Redis Cluster master killed under the running writer: its replica takes over, and no
row the writer committed is missing or older than it was."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from confluent_kafka import KafkaException, Producer

from jobs.feature_writer.cli import redis_client
from jobs.feature_writer.loop import Backoff, FeatureWriterLoop
from jobs.feature_writer.rows import ConversionOptions
from jobs.localstack import Stack
from jobs.localstack.redis_cluster import is_formed
from runtime.consumer import RecordConsumer
from runtime.kafka import KafkaSettings
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from schemas.codec import feature_update_codec
from tests.conftest import TopicFactory
from tests.jobs.feature_writer.samples import MINUTE, T0, item_window
from tests.jobs.feature_writer.test_writer_e2e_integration import committed
from tests.support.redis_cluster import masters, node_client, pid_of, replica_of, wait_until
from tests.support.stacks import own_stack_settings

pytestmark = pytest.mark.integration
PROJECT = "streamrec_failover"
ITEMS = 400
ROUNDS = 12  # every item's row is updated once a round, newer each time


def progress(kafka: KafkaSettings, group: str, topic: str) -> int:
    """Committed offset; -1 while the group's coordinator is still loading (a fresh broker)."""
    try:
        return committed(kafka, group, topic)
    except KafkaException:
        return -1


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(own_stack_settings(tmp_path / "home", redis_cluster=True))
    stack.up(["redis"])
    try:
        yield stack
    finally:
        stack.down(["redis"])


def test_a_master_killed_during_writes_loses_no_committed_row(
    kafka: KafkaSettings, topic_factory: TopicFactory, cluster: Stack
) -> None:
    url = cluster.settings.redis_url
    topic, group = topic_factory(partitions=1), f"fo-{uuid.uuid4().hex[:8]}"
    consumer = RecordConsumer(kafka, [topic], group, feature_update_codec())
    client = redis_client(url)
    loop = FeatureWriterLoop(
        consumer, OnlineStoreWriter(client, PROJECT), ConversionOptions(),
        batch_size=100, batch_timeout_s=0.05, backoff=Backoff(initial_s=0.05, max_s=0.5),
    )  # fmt: skip
    thread = threading.Thread(target=loop.run, kwargs={"max_seconds": 180}, daemon=True)
    producer = Producer(kafka.client_config())
    total = ITEMS * ROUNDS

    def produce() -> None:
        for round_ in range(1, ROUNDS + 1):
            for item in range(1, ITEMS + 1):
                update = item_window(item_id=item, window_end=T0 + round_ * MINUTE, pv=round_)
                producer.produce(topic, msgspec.json.encode(update))
            producer.flush(10)
            time.sleep(0.5)  # writes keep coming through the failover

    victim = sorted(masters(url))[0]
    heir = replica_of(url, victim)
    thread.start()
    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    try:
        wait_until(lambda: progress(kafka, group, topic) >= 2 * ITEMS, 60, "two rounds")
        os.kill(pid_of(cluster, victim), signal.SIGKILL)
        wait_until(lambda: heir in masters(url), 30, f"the replica on {heir} promoted")
        feeder.join(60)
        wait_until(lambda: progress(kafka, group, topic) == total, 120, "every record committed")
    finally:
        loop.stop.set()
        thread.join(30)
        consumer.close()
    assert loop.stats.redis_failures > 0, "the kill never reached the writer: nothing was shown"
    rows = read_rows(client, "item_trends", list(range(1, ITEMS + 1)), ["pv"], project=PROJECT)
    stale = {item: row for item, row in enumerate(rows, 1) if row != {"pv": ROUNDS}}
    assert not stale, f"{len(stale)} rows lost or stale, e.g. {list(stale.items())[:5]}"
    # The killed node comes back as its heir's replica, and `up` finds the cluster whole.
    cluster.up(["redis"])
    ports = cluster.settings.redis_node_ports()
    assert node_client(victim).info("replication")["role"] == "slave"
    assert is_formed([node_client(port) for port in ports], 3)
