"""The readers' per-master pipeline on a real Redis Cluster: the same replies as redis-py's
cluster pipeline, and a read that meets a moved slot still answers."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from redis.crc import key_slot

from runtime.online.connect import connect
from runtime.online.node_pipeline import NodePipeline, pipeline_for
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from schemas.views import ITEM_TRENDS
from tests.conftest import RedisClusterStack
from tests.runtime.online.test_cluster_calls_integration import item_rows
from tests.support.redis_cluster import entities_on, entity_key, masters, move_slot

pytestmark = pytest.mark.integration


def test_replies_equal_the_cluster_pipeline_in_queued_order(
    redis_cluster: RedisClusterStack,
) -> None:
    client: Any = connect(redis_cluster.url)
    prefix = uuid.uuid4().hex[:8]
    for n in range(60):
        client.set(f"{prefix}:s{n}", n)
        client.zadd(f"{prefix}:z{n}", {"a": n, "b": 2 * n})
        client.hset(f"{prefix}:h{n}", mapping={"f": n})
        client.sadd(f"{prefix}:m{n}", 1, 3)

    def queue(pipe: Any) -> Any:
        for n in range(60):
            pipe.get(f"{prefix}:s{n}")
            pipe.zrevrange(f"{prefix}:z{n}", 0, 5, withscores=True)
            pipe.hmget(f"{prefix}:h{n}", ["f", "g"])
            pipe.smismember(f"{prefix}:m{n}", [1, 2, 3])
            pipe.exists(f"{prefix}:none{n}")
        return pipe

    ours = queue(pipeline_for(client)).execute()
    assert isinstance(pipeline_for(client), NodePipeline)
    assert ours == queue(client.pipeline(transaction=False)).execute()
    assert len(ours) == 300


def test_a_read_after_a_slot_moved_refreshes_the_map_and_answers(
    redis_cluster: RedisClusterStack,
) -> None:
    project = f"t{uuid.uuid4().hex[:8]}"
    nodes = redis_cluster.stack.settings.redis_node_ports()
    source, target = sorted(masters(redis_cluster.url))[:2]
    entity = entities_on(nodes[0], ITEM_TRENDS, project, source, 1)[0]
    slot = key_slot(entity_key(ITEM_TRENDS, entity, project))
    client: Any = connect(redis_cluster.url)
    OnlineStoreWriter(client, project).write(item_rows([entity], pv=5))
    move_slot(nodes, slot, source, target)
    try:
        assert client.nodes_manager.get_node_from_slot(slot).port == source  # stale
        assert read_rows(client, ITEM_TRENDS, [entity], ["pv"], project=project) == [{"pv": 5}]
        assert client.nodes_manager.get_node_from_slot(slot).port == target
    finally:
        move_slot(nodes, slot, target, source)
