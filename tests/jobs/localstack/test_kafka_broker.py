import base64
from pathlib import Path

from jobs.localstack import StackSettings
from jobs.localstack.kafka_broker import KafkaService, random_cluster_id, render_server_properties


def _parse(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_server_properties_for_a_single_kraft_node(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, 19092, 19093, 16379)
    props = _parse(render_server_properties(settings, tmp_path / "data"))
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:19093"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    assert props["log.dirs"] == str(tmp_path / "data")
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["auto.create.topics.enable"] == "true"
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    ):
        assert props[key] == "1", key


def test_cluster_id_looks_like_kafkas() -> None:
    for _ in range(200):
        cluster_id = random_cluster_id()
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_command_names_files_inside_the_service_folder(tmp_path: Path) -> None:
    # The pid guard recognises the broker by its folder in the command line.
    service = KafkaService(StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2, 3))
    service._java = "/usr/bin/java"
    command = " ".join(service.command())
    assert service.marker in command
    assert command.endswith(f"kafka.Kafka {tmp_path}/home/kafka/server.properties")
    assert f"-cp {tmp_path}/cache/kafka-4.1.1/libs/*" in command
