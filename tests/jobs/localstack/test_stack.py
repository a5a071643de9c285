"""Stack orchestration on stand-in services made of `sh` (no Kafka, no Redis)."""

from pathlib import Path

import pytest

from jobs.localstack import Service, Stack, StackError, StackSettings
from jobs.localstack.kafka_broker import KafkaService
from jobs.localstack.redis_server import RedisService
from jobs.localstack.stack import ServiceFactory, select


class ShellService(Service):
    """Runs a shell script; healthy once the script has created a `ready` file.

    No `exec` in the scripts: the shell must stay, as its argv carries the marker.
    """

    script = "touch {dir}/ready; sleep 300"

    def ensure_installed(self) -> None:
        pass

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "ready").unlink(missing_ok=True)

    def command(self) -> list[str]:
        return ["/bin/sh", "-c", self.script.format(dir=self.dir), self.marker]

    def ports(self) -> tuple[int, ...]:
        return ()

    def endpoint(self) -> str:
        return f"file://{self.dir}"

    def is_healthy(self) -> bool:
        return (self.dir / "ready").exists()


class Good(ShellService):
    name = "good"


class Crashing(ShellService):
    name = "crashing"
    script = "echo 'fatal: bad config at line 3'; exit 3"


class Hanging(ShellService):
    name = "hanging"
    script = "echo 'waiting for Godot'; sleep 300"


def _stack(tmp_path: Path, *services: type[ShellService]) -> Stack:
    settings = StackSettings(tmp_path, tmp_path / "cache", 1, 2, 3)
    registry: list[tuple[str, ServiceFactory]] = [(cls.name, cls) for cls in services]
    return Stack(settings, registry)


def test_select_keeps_registry_order_and_rejects_unknown_names() -> None:
    assert select(None, ["kafka", "redis"]) == ["kafka", "redis"]
    assert select(["redis", "kafka"], ["kafka", "redis"]) == ["kafka", "redis"]
    with pytest.raises(StackError, match=r"unknown service.*nope; known: kafka, redis"):
        select(["nope"], ["kafka", "redis"])


def test_optional_services_start_only_when_named() -> None:
    known, optional = ["kafka", "prometheus"], frozenset({"prometheus"})
    assert select(None, known, optional) == ["kafka"]
    assert select(["prometheus"], known, optional) == ["prometheus"]
    assert select(None, known) == known  # down and status cover them


def test_up_is_idempotent_and_down_is_safe_to_repeat(tmp_path: Path) -> None:
    stack = _stack(tmp_path, Good)
    stack.down()
    stack.up(timeout_s=5)
    [first] = stack.status()
    assert first.running and first.healthy and first.pid is not None
    stack.up(timeout_s=5)
    assert stack.status()[0].pid == first.pid
    stack.down()
    stack.down()
    assert not stack.status()[0].running


def test_a_crash_during_startup_reports_the_log_tail(tmp_path: Path) -> None:
    stack = _stack(tmp_path, Crashing)
    with pytest.raises(StackError, match=r"(?s)crashing exited during startup.*bad config"):
        stack.up(timeout_s=5)
    assert not (tmp_path / "crashing" / "crashing.pid").exists()


def test_a_timeout_stops_the_process_and_reports_the_log_tail(tmp_path: Path) -> None:
    stack = _stack(tmp_path, Hanging)
    with pytest.raises(StackError, match=r"(?s)not healthy after 1 s.*waiting for Godot"):
        stack.up(timeout_s=1)
    assert not stack.status()[0].running


def test_several_brokers_are_services_of_their_own_that_kafka_names_together(
    tmp_path: Path,
) -> None:
    settings = StackSettings(tmp_path, tmp_path, kafka_brokers=3)
    stack = Stack(settings, registry=[("kafka", KafkaService), ("redis", RedisService)])
    assert list(stack.services) == ["kafka-1", "kafka-2", "kafka-3", "redis"]
    known = list(stack.services)
    assert select(["kafka"], known) == ["kafka-1", "kafka-2", "kafka-3"]
    assert select(["kafka-2"], known) == ["kafka-2"]


def test_a_redis_cluster_is_six_nodes_that_redis_names_together(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, redis_port=7000, redis_cluster=True)
    stack = Stack(settings, registry=[("kafka", KafkaService), ("redis", RedisService)])
    nodes = [f"redis-{n}" for n in range(1, 7)]
    assert list(stack.services) == ["kafka", *nodes]
    assert select(["redis"], list(stack.services)) == nodes
    ports = [stack.services[name].ports() for name in nodes]
    assert ports == [(7000 + n, 17000 + n) for n in range(6)]  # and each node's bus
    # Every role is pointed at the cluster by one URL naming the masters' ports.
    assert stack.exports(["redis"]) == {
        "STREAMREC_REDIS_URL": "redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
    }
