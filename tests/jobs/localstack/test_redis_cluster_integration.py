"""The stack's Redis Cluster on real redis-server processes: formed, kept, stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.localstack import Stack, process
from jobs.localstack.redis_cluster import is_formed
from runtime.online.connect import connect
from tests.support.redis_cluster import masters, node_client
from tests.support.stacks import own_stack_settings

pytestmark = pytest.mark.integration


def test_up_forms_three_sharded_masters_with_a_replica_each_and_keeps_them(
    tmp_path: Path,
) -> None:
    settings = own_stack_settings(tmp_path / "home", redis_cluster=True)
    stack = Stack(settings)
    ports = settings.redis_node_ports()
    try:
        stack.up(["redis"])
        assert [s.healthy for s in stack.status(["redis"])] == [True] * 6
        clients = [node_client(port) for port in ports]
        assert is_formed(clients, 3)
        served = masters(settings.redis_url)
        assert sorted(served) == ports[:3]
        client = connect(settings.redis_url)
        for n in range(300):  # keys of every shard
            client.set(f"k{n}", n)
        assert sum(node_client(port).dbsize() for port in ports[:3]) == 300

        stack.up(["redis"])  # idempotent: a formed cluster is only checked
        stack.down(["redis"])
        assert not any(s.running for s in stack.status(["redis"]))
        stack.up(["redis"])  # restarted from nodes.conf and the AOF: same shape, same data
        assert is_formed([node_client(port) for port in ports], 3)
        again: Any = connect(settings.redis_url)
        assert [int(again.get(f"k{n}") or -1) for n in range(300)] == list(range(300))
    finally:
        stack.down(["redis"])
    for service in stack.services.values():
        assert process.running_pid(service.pidfile, service.marker) is None
