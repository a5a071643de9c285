import base64
import hashlib
import stat
from pathlib import Path

import pytest

from jobs.localstack import StackSettings
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.kafka_broker import (
    KafkaService,
    _properties_value,
    client_properties,
    kafka_config_value,
    random_cluster_id,
    render_secured_properties,
    render_server_properties,
    scram_argument,
    scram_jaas,
    secured_mode,
)
from jobs.localstack.tls import TlsFiles


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
        "default.replication.factor",
        "min.insync.replicas",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    ):
        assert props[key] == "1", key
    assert "controller.quorum.voters" not in props


def test_three_brokers_are_a_static_quorum_with_three_replicas_two_in_sync(
    tmp_path: Path,
) -> None:
    settings = StackSettings(tmp_path, tmp_path, 19092, 19093, 16379, kafka_brokers=3)
    assert settings.kafka_bootstrap == "127.0.0.1:19092,127.0.0.1:19192,127.0.0.1:19292"
    props = _parse(render_server_properties(settings, tmp_path / "data", node=2))
    assert props["node.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19192,CONTROLLER://127.0.0.1:19193"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19192"
    voters = "1@127.0.0.1:19093,2@127.0.0.1:19193,3@127.0.0.1:19293"
    assert props["controller.quorum.voters"] == voters
    assert "controller.quorum.bootstrap.servers" not in props
    assert props["default.replication.factor"] == "3"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"
    # One broker may be down and writes with acks=all still succeed, none lost.
    assert props["min.insync.replicas"] == "2"
    assert props["transaction.state.log.min.isr"] == "2"
    names = [KafkaService(settings, node).name for node in (1, 2, 3)]
    assert names == ["kafka-1", "kafka-2", "kafka-3"]
    assert KafkaService(settings, 3).ports() == (19292, 19293)


def test_broker_count_is_checked_and_not_offered_in_the_secured_mode(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="STREAMREC_KAFKA_BROKERS"):
        StackSettings(tmp_path, tmp_path, kafka_brokers=0)
    with pytest.raises(StackError, match="secured mode"):
        StackSettings(tmp_path, tmp_path, kafka_brokers=3, secure=True)


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


def test_the_broker_heap_is_committed_at_start(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2, 3, kafka_heap_mb=512)
    service = KafkaService(settings)
    service._java = "/usr/bin/java"
    command = service.command()
    assert {"-Xms512m", "-Xmx512m", "-XX:+AlwaysPreTouch"} <= set(command)
    with pytest.raises(StackError, match="STREAMREC_KAFKA_HEAP_MB"):
        StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2, 3, kafka_heap_mb=100)


def test_the_broker_compiles_with_c1_only_unless_told_tiered(tmp_path: Path) -> None:
    def command(jit: str = "c1") -> list[str]:
        settings = StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2, 3, kafka_jit=jit)
        service = KafkaService(settings)
        service._java = "/usr/bin/java"
        return service.command()

    assert "-XX:TieredStopAtLevel=1" in command()
    assert not any("Tiered" in arg for arg in command("tiered"))
    with pytest.raises(StackError, match="STREAMREC_KAFKA_JIT must be one of c1, tiered"):
        command("c2")


def _secured(tmp_path: Path) -> StackSettings:
    return StackSettings(tmp_path / "home", tmp_path / "cache", 19092, 19093, secure=True)


def test_secured_properties_replace_the_listeners_and_add_the_authorizer(tmp_path: Path) -> None:
    settings = _secured(tmp_path)
    tls = TlsFiles.under(tmp_path / "secrets")
    props = _parse(render_secured_properties(settings, tmp_path / "data", tls, "pw"))
    assert props["listeners"] == "SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:19092"
    assert props["listener.security.protocol.map"] == "CONTROLLER:SSL,SASL_SSL:SASL_SSL"
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert props["ssl.keystore.type"] == "PEM"
    assert props["ssl.keystore.location"] == str(tls.server_keystore)
    assert props["ssl.truststore.location"] == str(tls.ca_cert)
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:admin;User:CN=127.0.0.1"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["auto.create.topics.enable"] == "false"
    jaas = props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert jaas.endswith('username="admin" password="pw";')
    # Everything else is the plaintext node's.
    assert props["log.dirs"] == str(tmp_path / "data")
    assert props["offsets.topic.replication.factor"] == "1"


def test_passwords_are_escaped_for_jaas_and_for_the_properties_file() -> None:
    assert scram_jaas("admin", 'a"b\\c').endswith('password="a\\"b\\\\c";')
    assert _properties_value('password="a\\"b"') == 'password="a\\\\"b"'
    assert _properties_value("é,\n") == "\\u00e9,\\u000a"
    assert _properties_value(" lead") == "\\ lead"


def test_scram_argument_carries_kafkas_salted_password() -> None:
    salt = bytes(range(32))
    argument = scram_argument("worker", "p,w=[x]", salt, 8192)
    assert argument.startswith("SCRAM-SHA-512=[name=worker,salt=")
    fields = dict(part.split("=", 1) for part in argument[len("SCRAM-SHA-512=[") : -1].split(","))
    assert base64.b64decode(fields["salt"]) == salt
    salted = hashlib.pbkdf2_hmac("sha512", b"p,w=[x]", salt, 8192)
    assert base64.b64decode(fields["saltedpassword"]) == salted
    assert fields["iterations"] == "8192"
    with pytest.raises(StackError):
        scram_argument("a,b", "pw", salt, 8192)


def test_client_properties_per_user(tmp_path: Path) -> None:
    plain = StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2)
    assert client_properties(plain, "worker") == {}
    settings = _secured(tmp_path)
    props = client_properties(settings, "worker")
    password = ensure_credentials(settings.secrets_dir).kafka["worker"]
    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "worker",
        "sasl.password": password,
        "ssl.ca.location": str(settings.secrets_dir / "ca.pem"),
    }
    with pytest.raises(StackError, match="no Kafka user"):
        client_properties(settings, "nobody")


def test_exports_hold_no_password_and_role_exports_hold_the_roles(tmp_path: Path) -> None:
    settings = _secured(tmp_path)
    service = KafkaService(settings)
    passwords = ensure_credentials(settings.secrets_dir).kafka
    assert service.exports() == {"STREAMREC_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:19092"}
    exports = service.role_exports("drift")
    assert exports["STREAMREC_KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092"
    config = dict(item.split("=", 1) for item in exports["STREAMREC_KAFKA_CONFIG"].split(","))
    assert config == client_properties(settings, "drift")
    assert passwords["worker"] not in str(exports)
    plain = KafkaService(StackSettings(tmp_path / "p", tmp_path / "cache", 19092, 2))
    assert plain.role_exports("drift") == plain.exports()


def test_config_value_escapes_commas_and_backslashes() -> None:
    text = kafka_config_value({"sasl.password": "a,b\\c", "x": "y"})
    assert text == "sasl.password=a\\,b\\\\c,x=y"


def _formatted(service: KafkaService, mode: str | None) -> None:
    service.data_dir.mkdir(parents=True)
    (service.data_dir / "meta.properties").write_text("formatted\n")
    if mode is not None:
        service.mode_marker.write_text(mode + "\n")


def test_a_plaintext_data_folder_is_refused_in_the_secured_mode(tmp_path: Path) -> None:
    service = KafkaService(_secured(tmp_path))
    _formatted(service, None)
    with pytest.raises(StackError, match="plaintext mode, so it has no SCRAM users"):
        service.prepare()


def test_a_secured_data_folder_is_refused_in_the_plaintext_mode(tmp_path: Path) -> None:
    service = KafkaService(StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2))
    _formatted(service, "secured 0123")
    with pytest.raises(StackError, match="STREAMREC_STACK_SECURE=1"):
        service.prepare()


def test_users_made_with_other_passwords_are_refused(tmp_path: Path) -> None:
    service = KafkaService(_secured(tmp_path))
    _formatted(service, "secured 0123")
    with pytest.raises(StackError, match="other passwords"):
        service.prepare()


def test_secured_properties_file_is_private(tmp_path: Path) -> None:
    settings = _secured(tmp_path)
    service = KafkaService(settings)
    _formatted(service, secured_mode(ensure_credentials(settings.secrets_dir)))
    service.dir.mkdir(parents=True, exist_ok=True)
    service.properties.write_text("old, world-readable\n")
    service.properties.chmod(0o644)
    service.prepare()
    assert stat.S_IMODE(service.properties.stat().st_mode) == 0o600
    assert "SASL_SSL" in service.properties.read_text()
