"""What the readers' cluster pipeline raises when no node answers (pure)."""

from types import SimpleNamespace

import pytest
import redis
from redis.exceptions import RedisClusterException

from runtime.online.node_pipeline import refresh_slot_map


def test_no_node_answering_for_the_slot_map_is_a_redis_error_the_retries_catch() -> None:
    def initialize() -> None:
        raise RedisClusterException("Redis Cluster cannot be connected")

    client = SimpleNamespace(nodes_manager=SimpleNamespace(initialize=initialize))
    with pytest.raises(redis.RedisError, match="no cluster node answered"):
        refresh_slot_map(client)
