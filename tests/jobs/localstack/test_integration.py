"""The real stack: Kafka and Redis processes in a temporary home on free ports."""

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, Producer

from jobs.localstack import Stack, StackSettings, process

pytestmark = pytest.mark.integration


def _free_ports(count: int) -> list[int]:
    # Hold all sockets open until every port is chosen, so no two are the same.
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (zombies have an empty one)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode():
                found.append(int(entry.name))
        except (OSError, UnicodeDecodeError):
            continue
    return found


@pytest.fixture
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    kafka_port, controller_port, redis_port, rest_port, rpc_port = _free_ports(5)
    settings = StackSettings(
        home=tmp_path_factory.mktemp("stack"),
        # Share the downloaded jars with the developer's stack and other tests.
        cache_dir=StackSettings.from_env().cache_dir,
        kafka_port=kafka_port,
        kafka_controller_port=controller_port,
        redis_port=redis_port,
        # Not started here (test_flink_integration covers Flink), but never the defaults.
        flink_rest_port=rest_port,
        flink_rpc_port=rpc_port,
    )
    stack = Stack(settings)
    try:
        yield stack
    finally:
        stack.down()


def _kafka_round_trip(bootstrap: str) -> bytes | None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("localstack-smoke", b"ping")
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "smoke", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["localstack-smoke"])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value: bytes | None = message.value()
                return value
        return None
    finally:
        consumer.close()


KAFKA_REDIS = ["kafka", "redis"]


def test_up_status_idempotent_down(stack: Stack) -> None:
    stack.up(KAFKA_REDIS, timeout_s=60)
    statuses = stack.status(KAFKA_REDIS)
    assert [(s.name, s.running, s.healthy) for s in statuses] == [
        ("kafka", True, True),
        ("redis", True, True),
    ]
    pids = {s.name: s.pid for s in statuses}
    assert _kafka_round_trip(stack.settings.kafka_bootstrap) == b"ping"
    assert redis.Redis.from_url(stack.settings.redis_url).ping()

    stack.up(KAFKA_REDIS, timeout_s=60)  # a no-op: the same processes keep running
    assert {s.name: s.pid for s in stack.status(KAFKA_REDIS)} == pids

    stack.down()
    for pid in pids.values():
        assert pid is not None
        assert not Path(f"/proc/{pid}/cmdline").exists() or not _cmdline(pid)
    assert _processes_mentioning(str(stack.settings.home)) == []
    everything = stack.status()
    assert [(s.running, s.healthy, s.pid) for s in everything] == [(False, False, None)] * len(
        stack.services
    )
    stack.down()  # nothing left to stop: still fine


def test_killed_redis_is_restarted_by_up_with_every_acknowledged_write(stack: Stack) -> None:
    """The online store and the out-of-stock set survive kill -9 (the AOF, see
    redis_server.py): nothing else would rebuild them."""
    stack.up(["redis"], timeout_s=30)
    [before] = stack.status(["redis"])
    assert before.pid is not None
    client = redis.Redis.from_url(stack.settings.redis_url)
    # Bounded: at the limit, keys with a TTL (feature rows) go, the out-of-stock set stays.
    config: dict[str, str] = client.config_get("maxmemory*")  # type: ignore[assignment]
    assert config["maxmemory-policy"] == "volatile-lru"
    assert int(config["maxmemory"]) == 2 * 1024**3
    # Durable before the reply, and not rewritten every few seconds under a busy stream.
    aof: dict[str, str] = client.config_get("a*")  # type: ignore[assignment]
    assert aof["appendfsync"] == "always"
    assert int(aof["auto-aof-rewrite-min-size"]) == 1024**3
    client.hset("row", mapping={"f": b"v"})
    client.sadd("out_of_stock", 7)
    client.close()
    os.kill(before.pid, signal.SIGKILL)
    # As a user would: `up` comes after the kill has landed, not while it is in flight.
    redis_service = stack.services["redis"]
    assert process.wait_gone(before.pid, redis_service.marker, timeout_s=5)
    stack.up(["redis"], timeout_s=30)  # the pidfile is stale now
    [after] = stack.status(["redis"])
    assert after.healthy and after.pid not in (None, before.pid)
    client = redis.Redis.from_url(stack.settings.redis_url)
    assert client.hgetall("row") == {b"f": b"v"} and client.smembers("out_of_stock") == {b"7"}
    client.close()
    # Only redis was asked for.
    assert not stack.status(["kafka"])[0].running


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
