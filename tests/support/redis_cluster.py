"""Driving a real Redis Cluster from tests: who serves a slot, moving a slot, node pids."""

from __future__ import annotations

import time
from typing import Any

import redis
from redis.crc import key_slot

from jobs.localstack import Stack, process
from jobs.localstack.redis_server import RedisService
from runtime.online.connect import connect
from schemas.online.feast_format import layout
from schemas.views import ViewSpec


def node_client(port: int) -> Any:
    """One node, typed loosely: its cluster commands and INFO replies are untyped in redis-py."""
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)


def _nodes(url: str) -> dict[str, Any]:
    """CLUSTER NODES as redis-py parses it: address -> flags, ids, slots."""
    client: Any = connect(url)
    try:
        nodes: dict[str, Any] = client.cluster_nodes()
    finally:
        client.close()
    return nodes


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def masters(url: str) -> dict[int, str]:
    """port -> node id of every master now serving slots."""
    return {
        _port(address): node["node_id"]
        for address, node in _nodes(url).items()
        if "master" in node["flags"] and node["slots"] and "fail" not in node["flags"]
    }


def replica_of(url: str, master_port: int) -> int:
    """The port of the replica following the master on ``master_port``."""
    nodes = _nodes(url)
    master_id = next(node["node_id"] for a, node in nodes.items() if _port(a) == master_port)
    for address, node in nodes.items():
        if node["master_id"] == master_id:
            return _port(address)
    raise AssertionError(f"no replica follows the master on {master_port}")


def slot_owner(port_of_any: int, slot: int) -> int:
    """The port of the master serving ``slot``, as the cluster sees it now."""
    for start, end, master, *_ in node_client(port_of_any).execute_command("CLUSTER", "SLOTS"):
        if start <= slot <= end:
            return int(master[1])
    raise AssertionError(f"slot {slot} is not served")


def entity_key(view: ViewSpec, entity_id: int, project: str) -> bytes:
    return layout(view).redis_key(entity_id, project)


def entities_on(
    port_of_any: int, view: ViewSpec, project: str, master: int, count: int, start: int = 1
) -> list[int]:
    """``count`` entity ids whose rows of ``view`` live on ``master`` (its port)."""
    found: list[int] = []
    entity = start
    owners: dict[int, int] = {}
    while len(found) < count:
        slot = key_slot(entity_key(view, entity, project))
        if slot not in owners:
            owners[slot] = slot_owner(port_of_any, slot)
        if owners[slot] == master:
            found.append(entity)
        entity += 1
    return found


def node_ids(ports: list[int]) -> dict[int, str]:
    out = {}
    for port in ports:
        reply = node_client(port).execute_command("CLUSTER", "MYID")
        out[port] = reply.decode() if isinstance(reply, bytes) else str(reply)
    return out


def move_slot(ports: list[int], slot: int, source: int, target: int, keys: bool = True) -> None:
    """Move ``slot`` from the master on ``source`` to the one on ``target``, as
    ``redis-cli --cluster reshard`` does: mark it, migrate its keys, hand it over.

    ``keys=False`` stops after marking it (a migration in progress); finish with
    :func:`finish_move`.
    """
    ids = node_ids(ports)
    src, dst = node_client(source), node_client(target)
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
    src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target])
    if keys:
        finish_move(ports, slot, source, target)


def migrate_key(source: int, target: int, key: bytes) -> None:
    node_client(source).execute_command("MIGRATE", "127.0.0.1", target, key, 0, 5000)


def finish_move(ports: list[int], slot: int, source: int, target: int) -> None:
    ids = node_ids(ports)
    src = node_client(source)
    while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
        src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
    # Target first, as redis-cli does; then the other masters at once (replicas learn
    # it from them).
    for port in [target, *(p for p in ports if p != target)]:
        node = node_client(port)
        if node.info("replication")["role"] == "master":
            node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target])
    wait_until(lambda: all(slot_owner(port, slot) == target for port in ports), 10)


def service_for(stack: Stack, port: int) -> RedisService:
    for service in stack.services.values():
        if isinstance(service, RedisService) and service.port == port:
            return service
    raise AssertionError(f"no Redis node on {port}")


def pid_of(stack: Stack, port: int) -> int:
    service = service_for(stack, port)
    pid = process.running_pid(service.pidfile, service.marker)
    assert pid is not None, f"{service.name} is not running"
    return pid


def wait_until(check: Any, timeout_s: float, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(0.1)
