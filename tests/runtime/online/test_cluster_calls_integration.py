"""The online-store writer on a real Redis Cluster: every master, redirections, replicas."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from runtime.online.cluster_calls import ReplicationError
from runtime.online.connect import OnlineClient, connect
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from schemas.online.feast_format import FeatureRow
from schemas.views import ITEM_TRENDS
from tests.conftest import RedisClusterStack
from tests.support.redis_cluster import (
    entities_on,
    entity_key,
    finish_move,
    masters,
    migrate_key,
    move_slot,
    node_client,
    pid_of,
    replica_of,
    slot_owner,
    wait_until,
)

pytestmark = pytest.mark.integration
T0_NS = 1_700_000_000_000_000_000


def item_rows(ids: list[int], pv: int, at_ns: int = T0_NS) -> list[FeatureRow]:
    values = {
        "conversion": 0.25,
        "category_id": 7,
        "window_start": 0,
        "cart": 0,
        "fav": 0,
        "buy": 0,
    }
    return [FeatureRow(ITEM_TRENDS, i, at_ns + pv, {**values, "pv": pv}) for i in ids]


def pvs(client: OnlineClient, ids: list[int], project: str) -> list[int | None]:
    rows = read_rows(client, ITEM_TRENDS, ids, ["pv"], project=project)
    return [row["pv"] if row else None for row in rows]


@pytest.fixture
def project() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(redis_cluster: RedisClusterStack) -> Iterator[OnlineClient]:
    client = connect(redis_cluster.url)
    yield client
    client.close()


def ports(cluster: RedisClusterStack) -> list[int]:
    return cluster.stack.settings.redis_node_ports()


def test_rows_spread_over_every_master_and_read_back(
    client: OnlineClient, redis_cluster: RedisClusterStack, project: str
) -> None:
    ids = list(range(1, 601))
    writer = OnlineStoreWriter(client, project)
    assert writer.is_cluster
    assert writer.write(item_rows(ids, pv=3)).written == 600
    assert pvs(client, ids, project) == [3] * 600
    for port in masters(redis_cluster.url):
        assert node_client(port).dbsize() > 0, f"master {port} got none of 600 rows"
    # Newer-wins per slot, as on one Redis: the same rows again are stale, newer ones land.
    again = writer.write(item_rows(ids, pv=3))
    assert (again.written, again.skipped_stale) == (0, 600)
    assert writer.write(item_rows(ids[:10], pv=4)).written == 10


def test_a_moved_slot_is_followed_and_the_map_refreshed(
    redis_cluster: RedisClusterStack, project: str
) -> None:
    nodes = ports(redis_cluster)
    source, target = sorted(masters(redis_cluster.url))[:2]
    entity = entities_on(nodes[0], ITEM_TRENDS, project, source, 1)[0]
    slot = entity_key(ITEM_TRENDS, entity, project)
    client: Any = connect(redis_cluster.url)  # its slot map is read now, before the move
    writer = OnlineStoreWriter(client, project)
    writer.write(item_rows([entity], pv=1))
    from redis.crc import key_slot

    slot_id = key_slot(slot)
    move_slot(nodes, slot_id, source, target)
    try:
        stale: object = client.nodes_manager.get_node_from_slot(slot_id)
        assert getattr(stale, "port", None) == source  # the client has not seen the move
        assert writer.write(item_rows([entity], pv=2)).written == 1  # MOVED, then sent again
        fresh: object = client.nodes_manager.get_node_from_slot(slot_id)
        assert getattr(fresh, "port", None) == target
        assert pvs(connect(redis_cluster.url), [entity], project) == [2]
    finally:
        move_slot(nodes, slot_id, target, source)
        client.close()


def test_a_key_already_migrated_is_written_where_ask_points(
    client: OnlineClient, redis_cluster: RedisClusterStack, project: str
) -> None:
    nodes = ports(redis_cluster)
    source, target = sorted(masters(redis_cluster.url))[:2]
    entity = entities_on(nodes[0], ITEM_TRENDS, project, source, 1)[0]
    key = entity_key(ITEM_TRENDS, entity, project)
    from redis.crc import key_slot

    slot = key_slot(key)
    writer = OnlineStoreWriter(client, project)
    writer.write(item_rows([entity], pv=1))
    move_slot(nodes, slot, source, target, keys=False)  # a migration under way
    migrate_key(source, target, key)
    try:
        # The source answers ASK for a key it no longer holds; without ASKING the
        # target would answer MOVED back, and the call would bounce until it failed.
        assert writer.write(item_rows([entity], pv=2)).written == 1
        finish_move(nodes, slot, source, target)
        assert slot_owner(nodes[0], slot) == target
        assert pvs(connect(redis_cluster.url), [entity], project) == [2]
    finally:
        if slot_owner(nodes[0], slot) != source:
            move_slot(nodes, slot, target, source)


def rows_of_a_master_and_its_replica(
    cluster: RedisClusterStack, project: str, count: int
) -> tuple[list[int], int]:
    """``count`` entities whose rows live on the first master; its replica's port."""
    master = sorted(masters(cluster.url))[0]
    ids = entities_on(ports(cluster)[0], ITEM_TRENDS, project, master, count)
    return ids, replica_of(cluster.url, master)


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The process paused (SIGSTOP): connected, answering nothing, until the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_batch_no_replica_confirmed_fails_and_succeeds_when_sent_again(
    client: OnlineClient, redis_cluster: RedisClusterStack, project: str
) -> None:
    ids, replica = rows_of_a_master_and_its_replica(redis_cluster, project, 5)
    writer = OnlineStoreWriter(client, project, replica_acks=1, wait_timeout_ms=300)
    # The replica stops taking the stream: the batch must fail, not count as written.
    with (
        stopped(pid_of(redis_cluster.stack, replica)),
        pytest.raises(ReplicationError, match="confirmed by 0 of 1 replica"),
    ):
        writer.write(item_rows(ids, pv=1))
    wait_until(lambda: node_client(replica).info("replication")["master_link_status"] == "up", 30)
    # Sent again whole, as the writer's loop does: rows already on the master are stale
    # there, the rest land, and now a replica confirms them.
    writer.write(item_rows(ids, pv=1))
    assert pvs(client, ids, project) == [1] * 5
    replica_view = node_client(replica)
    replica_view.execute_command("READONLY")
    assert all(replica_view.exists(entity_key(ITEM_TRENDS, i, project)) for i in ids)


def test_without_replica_acks_no_wait_is_sent(
    client: OnlineClient, redis_cluster: RedisClusterStack, project: str
) -> None:
    ids, replica = rows_of_a_master_and_its_replica(redis_cluster, project, 3)
    # The setting's documented cost: acknowledged before any replica holds it.
    with stopped(pid_of(redis_cluster.stack, replica)):
        writer = OnlineStoreWriter(client, project, replica_acks=0)
        assert writer.write(item_rows(ids, 1)).written == 3


def test_a_script_call_spanning_slots_is_refused_before_sending(client: OnlineClient) -> None:
    from runtime.online.cluster_calls import ClusterCalls, CrossSlotCall, ScriptCall

    runner = ClusterCalls(client)  # type: ignore[arg-type]
    with pytest.raises(CrossSlotCall):
        runner.run([ScriptCall("return 1", [b"a", b"b"], [])])
    with pytest.raises(redis.ResponseError, match="boom"):
        runner.run([ScriptCall("return redis.error_reply('boom')", [b"a"], [])])
