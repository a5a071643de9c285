"""The stack's read replica on real redis-server processes: it follows, refuses, recovers."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import redis

from jobs.localstack import Stack, process
from jobs.localstack.process import read_pidfile
from tests.support.redis_cluster import wait_until
from tests.support.stacks import free_port, own_stack_settings

pytestmark = pytest.mark.integration


def read(client: redis.Redis, key: str) -> bytes | None:
    """``key``'s value, None while the replica refuses reads (its first copy, a resync)."""
    try:
        value: bytes | None = client.get(key)  # type: ignore[assignment]
        return value
    except redis.RedisError:
        return None


def test_the_replica_serves_the_primarys_writes_and_never_stale_rows(tmp_path: Path) -> None:
    settings = own_stack_settings(tmp_path / "home", redis_replica_port=free_port())
    stack = Stack(settings)
    try:
        stack.up(["redis"])
        assert [(s.name, s.healthy) for s in stack.status(["redis"])] == [
            ("redis", True),
            ("redis-replica", True),
        ]
        primary = redis.Redis.from_url(settings.redis_url)
        replica = redis.Redis.from_url(settings.redis_replica_url)
        primary.set("row", "1")
        wait_until(lambda: read(replica, "row") == b"1", 2.0, "the write on the replica")
        with pytest.raises(redis.ReadOnlyError):
            replica.set("row", "2")  # every write goes to the primary, which persists it

        # The primary killed: the replica refuses reads instead of serving rows that
        # may already be behind the store's.
        pid = read_pidfile(stack.services["redis"].pidfile)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

        def refused() -> bool:
            try:
                replica.get("row")
            except redis.RedisError as exc:
                return "MASTERDOWN" in str(exc)
            return False

        wait_until(refused, 5.0, "the replica refusing reads")
        # Back from its AOF, the primary is copied again and the replica serves.
        stack.up(["redis"])
        primary = redis.Redis.from_url(settings.redis_url)
        assert primary.get("row") == b"1"
        primary.set("row", "3")
        wait_until(lambda: read(replica, "row") == b"3", 10.0, "the replica serving again")
    finally:
        stack.down(["redis"])
    for service in stack.services.values():
        assert process.running_pid(service.pidfile, service.marker) is None
