"""Forming the local Redis Cluster from six started nodes: what ``redis-cli --cluster
create`` does, in a few commands, so the stack needs redis-server alone.

The first three nodes become masters with a third of the slots each; node 3 + i
replicates master i. Forming is idempotent: a cluster that already formed (the
nodes restarted from their ``nodes.conf``) is only waited for, and each step is
taken only where it is missing, so an ``up`` interrupted half-way completes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import redis

from jobs.localstack.errors import StackError
from jobs.localstack.settings import HOST

SLOTS = 16384
_POLL_S = 0.2


def slot_ranges(masters: int) -> list[tuple[int, int]]:
    """Contiguous, inclusive slot ranges, one per master, covering all slots (pure)."""
    bounds = [SLOTS * i // masters for i in range(masters + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(masters)]


def cluster_info(client: redis.Redis) -> dict[str, str]:
    text = client.execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]
    # Two arguments, so redis-py leaves the reply as Redis wrote it: "name:value" lines.
    if isinstance(text, bytes):
        text = text.decode()
    return dict(line.split(":", 1) for line in str(text).split() if ":" in line)


def _myid(client: redis.Redis) -> str:
    reply = client.execute_command("CLUSTER", "MYID")  # type: ignore[no-untyped-call]
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def _wait(what: str, timeout_s: float, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise StackError(f"the Redis Cluster did not form: {what} after {timeout_s:.0f} s")
        time.sleep(_POLL_S)


def is_formed(clients: Sequence[redis.Redis], masters: int) -> bool:
    """Every node sees every slot served and all the nodes; ``masters`` masters hold the
    slots, and every other node is a replica linked to its master.

    Which node plays which part may have changed since the cluster formed: after a
    failover a replica is the master and the old master, restarted, its replica.
    """
    try:
        infos = [cluster_info(client) for client in clients]
        roles: list[Any] = [client.info("replication") for client in clients]
    except redis.RedisError:
        return False
    replicas = [role for role in roles if role.get("role") == "slave"]
    return (
        all(
            info.get("cluster_state") == "ok"
            and int(info.get("cluster_known_nodes", 0)) == len(clients)
            and int(info.get("cluster_size", 0)) == masters
            for info in infos
        )
        and len(replicas) == len(clients) - masters
        and all(role.get("master_link_status") == "up" for role in replicas)
    )


def own_slots(client: redis.Redis) -> int:
    """How many slots this node serves itself (from its CLUSTER NODES line)."""
    for line in _nodes_lines(client):
        fields = line.split()
        if "myself" in fields[2]:
            return sum(_range_size(text) for text in fields[8:] if not text.startswith("["))
    return 0


def _range_size(text: str) -> int:
    start, _, end = text.partition("-")
    return int(end or start) - int(start) + 1


def _nodes_lines(client: redis.Redis) -> list[str]:
    # Two arguments, so redis-py leaves the reply as Redis wrote it (text, one node a line).
    reply = client.execute_command("CLUSTER", "NODES")  # type: ignore[no-untyped-call]
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    return text.splitlines()


def form_cluster(ports: Sequence[int], masters: int, timeout_s: float = 60.0) -> None:
    """Join the nodes on ``ports`` into one cluster (masters first, then one replica each)."""
    clients = [redis.Redis(host=HOST, port=port, socket_timeout=5) for port in ports]
    try:
        if is_formed(clients, masters):
            return
        first = clients[0]
        for port in ports[1:]:
            first.execute_command("CLUSTER", "MEET", HOST, port)  # type: ignore[no-untyped-call]
        _wait(
            "not every node met the others",
            timeout_s,
            lambda: all(
                int(cluster_info(c).get("cluster_known_nodes", 0)) == len(ports) for c in clients
            ),
        )
        ids = [_myid(client) for client in clients]
        if int(cluster_info(first).get("cluster_slots_assigned", 0)) == 0:
            for client, (start, end) in zip(clients, slot_ranges(masters), strict=False):
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", start, end)  # type: ignore[no-untyped-call]
        for index, replica in enumerate(clients[masters:]):
            role: Any = replica.info("replication")
            # Only a fresh node: a promoted replica serving slots stays what it is.
            if role.get("role") == "master" and own_slots(replica) == 0:
                master_id = ids[index % masters]
                # A replica may only follow a master it already knows as one.
                _wait(
                    f"node {ports[masters + index]} does not know its master yet",
                    timeout_s,
                    partial(_knows_master, replica, master_id),
                )
                replica.execute_command("CLUSTER", "REPLICATE", master_id)  # type: ignore[no-untyped-call]
        _wait("not every slot served with replicas linked", timeout_s,
              lambda: is_formed(clients, masters))  # fmt: skip
    except redis.RedisError as exc:
        raise StackError(f"forming the Redis Cluster failed: {exc}") from exc
    finally:
        for client in clients:
            client.close()


def _knows_master(client: redis.Redis, node_id: str) -> bool:
    return any(
        line.startswith(node_id) and "master" in line.split()[2] for line in _nodes_lines(client)
    )
