"""docker/compose.yaml: valid per the Compose Specification, and matching the code.

No Docker engine runs here; the file is validated against the specification's
own JSON schema (kept in tests/docker/schemas, see its README), which refuses
unknown keys, so a misspelt key fails. Every image, port, variable and path in
it is then checked against the code and the repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from jobs.localstack.redis_server import render_redis_conf, render_replica_conf
from jobs.localstack.settings import StackSettings
from tests.docker.manifests import DOCKER, REPO, code_env_names, code_ports, compose

SCHEMA = Path(__file__).parent / "schemas" / "compose-spec.json"
EXPECTED_SERVICES = {
    "kafka", "redis", "redis-replica", "flink-jobmanager", "flink-taskmanager", "feature-job",
    "feature-writer", "triton", "worker", "drift", "prometheus", "grafana", "alertmanager",
    "canary", "outcome",
}  # fmt: skip
# Mount sources that are generated, not committed: the ranker's artifacts (make train).
GENERATED_MOUNTS = {"../.cache/ranker"}


def mount_source(volume: str) -> str:
    """The host side of ``source:target[:ro]``; a ``${VAR:-default}`` gives its default."""
    match = re.match(r"^(?:\$\{[A-Z_]+:-([^}]+)\}|([^:]+)):", volume)
    assert match, volume
    return match.group(1) or match.group(2)


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    spec = compose()
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(spec)
    found: dict[str, Any] = spec["services"]
    return found


def test_compose_matches_its_schema_and_has_the_whole_stack(services: dict[str, Any]) -> None:
    assert set(services) == EXPECTED_SERVICES


def test_the_schema_refuses_a_misspelt_key() -> None:
    spec = compose()
    spec["services"]["worker"]["enviroment"] = {"STREAMREC_REDIS_URL": "redis://redis:6379/0"}
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError, match="enviroment"):
        jsonschema.Draft7Validator(schema).validate(spec)


def test_images_name_no_registry_host(services: dict[str, Any]) -> None:
    for name, service in services.items():
        image = service["image"]
        reference = re.sub(r"\$\{[A-Z_]+:-([^}]+)\}", r"\1", image)  # the documented default
        first = reference.split("/")[0]
        assert "/" not in reference or not re.search(r"[.:]", first), (name, image)
        assert ":" in reference, f"{name}: pin a tag ({image})"


def test_triton_gets_a_gpu_and_the_model_repository(services: dict[str, Any]) -> None:
    triton = services["triton"]
    devices = triton["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    assert "../inference/model_repository:/models:ro" in triton["volumes"]
    assert "--model-repository=/models" in triton["command"]
    assert triton["healthcheck"]["test"][-1].endswith("/v2/health/ready")


def test_every_variable_set_is_one_the_code_reads(services: dict[str, Any]) -> None:
    known = code_env_names()
    for name, service in services.items():
        for variable in service.get("environment", {}):
            if variable.startswith("STREAMREC_"):
                assert variable in known, f"{name} sets {variable}, which no code reads"


# What the host may reach: Kafka for producers and consumers, Grafana for people.
PUBLISHED = {"kafka", "grafana"}
BACK_END = EXPECTED_SERVICES - PUBLISHED
SECRETS = (
    "STREAMREC_REDIS_PASSWORD", "STREAMREC_TRITON_CONTROL_KEY",
    "GRAFANA_ADMIN_USER", "GRAFANA_ADMIN_PASSWORD",
    "ALERTMANAGER_PAGE_WEBHOOK_URL", "ALERTMANAGER_TICKET_WEBHOOK_URL",
)  # fmt: skip
_PUBLISH = re.compile(r"^127\.0\.0\.1:(\d+):(\d+)$")


def published_ports(service: dict[str, Any]) -> set[int]:
    ports = set()
    for entry in service.get("ports", []):
        match = _PUBLISH.match(str(entry))
        assert match, f'{entry!r}: publish as "127.0.0.1:port:port" (loopback only)'
        ports.add(int(match.group(1)))
    return ports


def test_only_kafka_and_grafana_publish_and_only_on_loopback(services: dict[str, Any]) -> None:
    published = {n: published_ports(s) for n, s in services.items() if s.get("ports")}
    assert published == {"kafka": {code_ports()["kafka"]}, "grafana": {3000}}
    for name, service in services.items():
        assert not service.get("expose") or name in PUBLISHED, name


def test_back_end_services_are_only_on_an_internal_network(services: dict[str, Any]) -> None:
    networks = compose()["networks"]
    assert networks["backend"]["internal"] is True
    assert not networks["frontend"].get("internal")
    for name in BACK_END:
        assert services[name]["networks"] == ["backend"], name
    for name in PUBLISHED:
        assert set(services[name]["networks"]) == {"frontend", "backend"}, name


def test_no_secret_has_a_default_and_none_is_written_in() -> None:
    text = (DOCKER / "compose.yaml").read_text(encoding="utf-8")
    for variable in SECRETS:
        uses = re.findall(r"\$\{" + variable + r"([^}]*)\}", text)
        assert uses, f"{variable} is not used"
        assert all(use.startswith(":?") for use in uses), f"{variable}: {uses} (a default?)"
    for name, service in compose()["services"].items():
        for key, value in service.get("environment", {}).items():
            words = set(key.split("_"))
            if words & {"PASSWORD", "SECRET", "TOKEN", "KEY"} or key.endswith("_AUTH"):
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]*\}", str(value)), (name, key)


def test_redis_persists_as_the_local_stack_does(services: dict[str, Any], tmp_path: Path) -> None:
    command = services["redis"]["command"]
    flags = dict(zip(command[1::2], command[2::2], strict=False))
    settings = StackSettings(home=tmp_path / "home", cache_dir=tmp_path / "cache")
    local = dict(
        line.split(" ", 1)
        for line in render_redis_conf(settings, tmp_path).splitlines()
        if line and not line.startswith("#")
    )
    for name in ("appendonly", "appendfsync", "auto-aof-rewrite-min-size", "maxmemory-policy"):
        assert flags[f"--{name}"] == local[name], name


def test_redis_asks_for_the_password_its_clients_send(services: dict[str, Any]) -> None:
    command = services["redis"]["command"]
    password = command[command.index("--requirepass") + 1]
    assert password.startswith("${STREAMREC_REDIS_PASSWORD:?")
    clients = [n for n, s in services.items() if "STREAMREC_REDIS_URL" in s.get("environment", {})]
    assert set(clients) == {"feature-writer", "worker", "canary"}
    for name in clients:
        url = services[name]["environment"]["STREAMREC_REDIS_URL"]
        assert url == f"redis://:{password}@redis:{code_ports()['redis']}/0", name


def test_the_worker_reads_features_from_a_replica_as_the_local_stack_has_it(
    services: dict[str, Any], tmp_path: Path
) -> None:
    command = services["redis-replica"]["command"]

    def flag(name: str, values: int = 1) -> str:
        at = command.index(f"--{name}") + 1
        return " ".join(command[at : at + values])

    password = flag("requirepass")
    assert flag("masterauth") == password == services["redis"]["command"][-1]
    port = code_ports()["redis"]
    assert flag("replicaof", 2) == f"redis {port}"
    settings = StackSettings(
        home=tmp_path / "home", cache_dir=tmp_path / "cache", redis_replica_port=port + 1
    )
    local = dict(
        line.split(" ", 1)
        for line in render_replica_conf(settings, tmp_path).splitlines()
        if line and not line.startswith("#")
    )
    for name in ("save", "appendonly", "replica-read-only", "replica-serve-stale-data"):
        assert flag(name) == local[name].strip('"'), name
    worker = services["worker"]
    url = worker["environment"]["STREAMREC_WORKER_REDIS_READ_URL"]
    assert url == f"redis://:{password}@redis-replica:{port}/0"
    assert worker["depends_on"]["redis-replica"] == {"condition": "service_healthy"}


def test_grafana_has_an_admin_from_the_environment_and_no_anonymous_access(
    services: dict[str, Any],
) -> None:
    env = services["grafana"]["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_SECURITY_ADMIN_USER"].startswith("${GRAFANA_ADMIN_USER:?")
    assert env["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?")


def test_tritons_model_control_needs_a_key_on_both_endpoints(services: dict[str, Any]) -> None:
    from inference.serving.settings import CONTROL_KEY_ENV, CONTROL_KEY_HEADER

    command = services["triton"]["command"]
    for flag in ("--grpc-restricted-protocol=", "--http-restricted-api="):
        (rule,) = [word.removeprefix(flag) for word in command if word.startswith(flag)]
        protocols, key = rule.split(":", 1)
        assert "model-repository" in protocols.split(","), flag
        assert key.startswith(f"{CONTROL_KEY_HEADER}=${{{CONTROL_KEY_ENV}:?"), flag


def test_metrics_listen_in_their_containers_on_the_code_ports(services: dict[str, Any]) -> None:
    ports = code_ports()
    worker, drift = services["worker"]["environment"], services["drift"]["environment"]
    outcome = services["outcome"]["environment"]
    writer = services["feature-writer"]["environment"]
    # The code binds loopback by default; in a container Prometheus scrapes over the network.
    assert worker["STREAMREC_WORKER_METRICS_HOST"] == drift["STREAMREC_DRIFT_METRICS_HOST"]
    assert worker["STREAMREC_WORKER_METRICS_HOST"] == outcome["STREAMREC_OUTCOME_METRICS_HOST"]
    assert (
        worker["STREAMREC_WORKER_METRICS_HOST"] == writer["STREAMREC_FEATURE_WRITER_METRICS_HOST"]
    )
    assert worker["STREAMREC_WORKER_METRICS_HOST"] == "0.0.0.0"
    assert worker["STREAMREC_WORKER_METRICS_PORT"] == str(ports["worker-metrics"])
    assert worker["STREAMREC_TRITON_URL"] == f"triton:{ports['triton-grpc']}"
    assert drift["STREAMREC_DRIFT_METRICS_PORT"] == str(ports["drift-metrics"])
    assert outcome["STREAMREC_OUTCOME_METRICS_PORT"] == str(ports["outcome-metrics"])
    assert writer["STREAMREC_FEATURE_WRITER_METRICS_PORT"] == str(ports["writer-metrics"])
    triton = services["triton"]["command"]
    for flag in ("http", "grpc", "metrics"):
        assert f"--{flag}-port={ports['triton-' + flag]}" in triton


def test_every_mounted_path_and_build_file_exists(services: dict[str, Any]) -> None:
    spec = compose()
    named = set(spec.get("volumes", {}))
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = mount_source(volume)
            if source in named or source in GENERATED_MOUNTS:
                continue
            assert (DOCKER / source).exists(), f"{name} mounts {source}, which does not exist"
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == REPO
            assert (context / build["dockerfile"]).exists()


def test_the_flink_job_uses_the_jars_the_image_builds(services: dict[str, Any]) -> None:
    command = services["feature-job"]["command"]
    jars = [command[i + 1] for i, word in enumerate(command) if word == "--jar"]
    assert [Path(j).name for j in jars] == [
        "flink-sql-connector-kafka-5.0.0-2.2.jar",
        "streamrec-flink-functions.jar",
    ]
    from jobs.features.functions_jar import JAR_NAME
    from jobs.features.maven import KAFKA_CONNECTOR

    assert Path(jars[1]).name == JAR_NAME
    assert Path(jars[0]).name == f"{KAFKA_CONNECTOR[1]}-{KAFKA_CONNECTOR[2]}.jar"
    pom = (DOCKER / "flink" / "connectors-pom.xml").read_text(encoding="utf-8")
    assert f"<version>{KAFKA_CONNECTOR[2]}</version>" in pom


ALERTMANAGER_PORT = 9093  # Alertmanager's default --web.listen-address


def test_prometheus_loads_the_rules_and_alerts_alertmanager(services: dict[str, Any]) -> None:
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["prometheus"]["volumes"]}
    assert mounts["/etc/prometheus/rules"] == "./prometheus/rules"
    (pattern,) = config["rule_files"]
    assert pattern.startswith("/etc/prometheus/rules/")
    folder = DOCKER / "prometheus" / "rules"
    loaded = {p.name for p in folder.glob(pattern.removeprefix("/etc/prometheus/rules/"))}
    assert loaded, f"{pattern} matches no file in {folder}"
    # promtool's unit tests sit beside the rules and must not be loaded as rules.
    assert not {name for name in loaded if name.endswith("_test.yml")}
    (alertmanagers,) = config["alerting"]["alertmanagers"]
    (target,) = [t for c in alertmanagers["static_configs"] for t in c["targets"]]
    assert target.split(":")[0] == "alertmanager"
    assert int(target.split(":")[1]) == ALERTMANAGER_PORT


def test_alertmanager_routes_pages_and_tickets_to_webhooks_from_files(
    services: dict[str, Any],
) -> None:
    alertmanager = services["alertmanager"]
    assert alertmanager["networks"] == ["backend"]
    assert not alertmanager.get("ports") and not alertmanager.get("expose")
    command = alertmanager["command"]
    config_flag = "--config.file=/etc/alertmanager/alertmanager.yml"
    assert config_flag in command
    assert (
        "./alertmanager/alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro"
        in (alertmanager["volumes"])
    )
    config = yaml.safe_load((DOCKER / "alertmanager" / "alertmanager.yml").read_text())
    routes = {r["matchers"][0]: r["receiver"] for r in config["route"]["routes"]}
    assert routes == {'severity="page"': "page", 'severity="ticket"': "ticket"}
    # Each receiver reads its URL from a file compose fills from a required variable.
    spec_configs = compose()["configs"]
    mounted = {c["target"]: c["source"] for c in alertmanager["configs"]}
    for receiver in config["receivers"]:
        (webhook,) = receiver["webhook_configs"]
        assert "url" not in webhook, receiver["name"]
        source = mounted[webhook["url_file"]]
        variable = f"ALERTMANAGER_{receiver['name'].upper()}_WEBHOOK_URL"
        assert variable in SECRETS
        assert spec_configs[source]["content"].startswith(f"${{{variable}:?"), source
