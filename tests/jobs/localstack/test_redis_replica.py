"""The read replica of the stack's one Redis: its config, settings and place in the stack."""

from pathlib import Path
from typing import Any

import pytest

from jobs.localstack import Stack, StackError, StackSettings
from jobs.localstack.kafka_broker import KafkaService
from jobs.localstack.redis_server import RedisService, render_replica_conf
from jobs.localstack.stack import select


def test_the_replica_follows_the_primary_keeps_no_files_and_refuses_stale_reads(
    tmp_path: Path,
) -> None:
    settings = StackSettings(tmp_path, tmp_path, redis_port=7000, redis_replica_port=7100)
    conf = render_replica_conf(settings, tmp_path / "redis-replica").splitlines()
    assert "port 7100" in conf and "bind 127.0.0.1" in conf
    assert "replicaof 127.0.0.1 7000" in conf
    assert "replica-read-only yes" in conf
    assert "appendonly no" in conf and 'save ""' in conf
    assert "replica-serve-stale-data no" in conf


def test_redis_names_the_primary_and_its_replica_together(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, redis_port=7000, redis_replica_port=7100)
    stack = Stack(settings, registry=[("kafka", KafkaService), ("redis", RedisService)])
    assert list(stack.services) == ["kafka", "redis", "redis-replica"]
    known = list(stack.services)
    assert select(["redis"], known) == ["redis", "redis-replica"]
    assert select(["redis-replica"], known) == ["redis-replica"]
    assert stack.services["redis-replica"].ports() == (7100,)
    # The writer and the feature path write to the primary; the worker reads the replica.
    assert stack.exports(["redis"]) == {
        "STREAMREC_REDIS_URL": "redis://127.0.0.1:7000/0",
        "STREAMREC_WORKER_REDIS_READ_URL": "redis://127.0.0.1:7100/0",
    }


def test_without_a_replica_port_redis_is_one_process(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, redis_port=7000)
    stack = Stack(settings, registry=[("redis", RedisService)])
    assert list(stack.services) == ["redis"]
    assert settings.redis_replica_url == ""
    assert stack.exports(["redis"]) == {"STREAMREC_REDIS_URL": "redis://127.0.0.1:7000/0"}


@pytest.mark.parametrize("mode", [{"redis_cluster": True}, {"secure": True}])
def test_a_replica_is_refused_where_it_is_not_set_up(tmp_path: Path, mode: dict[str, Any]) -> None:
    with pytest.raises(StackError, match=r"STREAMREC_REDIS_REPLICA_PORT.*one plain Redis"):
        StackSettings(tmp_path, tmp_path, redis_replica_port=7100, **mode)


def test_the_replica_port_is_checked_like_the_others(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="STREAMREC_REDIS_REPLICA_PORT=70000 is outside"):
        StackSettings(tmp_path, tmp_path, redis_replica_port=70000)
    env = {"STREAMREC_REDIS_REPLICA_PORT": "6380"}
    assert StackSettings.from_env(env).redis_replica_url == "redis://127.0.0.1:6380/0"
