"""Redis goes away under the running writer: it retries, commits nothing, then catches up."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
import redis
from confluent_kafka import Producer

from jobs.feature_writer.cli import redis_client
from jobs.feature_writer.loop import Backoff, FeatureWriterLoop
from jobs.feature_writer.rows import ConversionOptions
from runtime.consumer import RecordConsumer
from runtime.kafka import KafkaSettings
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from schemas.codec import feature_update_codec
from tests.conftest import TopicFactory, free_port
from tests.jobs.feature_writer.samples import T0, item_window
from tests.jobs.feature_writer.test_writer_e2e_integration import committed

pytestmark = pytest.mark.integration
PROJECT = "streamrec_outage"


class OwnRedis:
    """A redis-server this test starts and kills (the session's Redis stays untouched)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server not installed"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: _pings(self.url), "redis to start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


def _pings(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.2).ping())
    except redis.RedisError:
        return False


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def test_writer_survives_redis_outage(
    kafka: KafkaSettings, topic_factory: TopicFactory, own_redis: OwnRedis
) -> None:
    topic, group = topic_factory(partitions=1), f"fw-{uuid.uuid4().hex[:8]}"
    consumer = RecordConsumer(kafka, [topic], group, feature_update_codec())
    client = redis_client(own_redis.url)
    loop = FeatureWriterLoop(
        consumer, OnlineStoreWriter(client, PROJECT), ConversionOptions(),
        batch_size=10, batch_timeout_s=0.1, backoff=Backoff(initial_s=0.05, max_s=0.3),
    )  # fmt: skip
    thread = threading.Thread(target=loop.run, kwargs={"max_seconds": 120}, daemon=True)
    producer = Producer(kafka.client_config())

    def produce(item_id: int) -> None:
        producer.produce(topic, msgspec.json.encode(item_window(item_id=item_id, window_end=T0)))
        producer.flush(10)

    def stored(item_id: int) -> bool:
        return read_rows(client, "item_trends", [item_id], ["pv"], project=PROJECT) != [None]

    thread.start()
    try:
        produce(1)
        wait_for(lambda: stored(1) and committed(kafka, group, topic) == 1, "first row")
        own_redis.stop()
        produce(2)
        produce(3)
        wait_for(lambda: loop.stats.redis_failures >= 3, "retries while Redis is down")
        assert thread.is_alive()
        assert committed(kafka, group, topic) == 1  # nothing committed past the failing batch
        own_redis.start()  # same port, empty: the retried batch must land
        wait_for(lambda: stored(2) and stored(3), "rows after Redis returned")
        wait_for(lambda: committed(kafka, group, topic) == 3, "commit after recovery")
    finally:
        loop.stop.set()
        thread.join(30)
        consumer.close()
    assert not thread.is_alive()
