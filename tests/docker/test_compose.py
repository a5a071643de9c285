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

from tests.docker.manifests import DOCKER, REPO, code_env_names, code_ports, compose

SCHEMA = Path(__file__).parent / "schemas" / "compose-spec.json"
EXPECTED_SERVICES = {
    "kafka", "redis", "flink-jobmanager", "flink-taskmanager", "feature-job",
    "feature-writer", "triton", "worker", "drift", "prometheus", "grafana",
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


def test_ports_match_the_code_defaults(services: dict[str, Any]) -> None:
    ports = code_ports()
    published = {n: {int(p.split(":")[1]) for p in s.get("ports", [])} for n, s in services.items()}
    assert published["kafka"] == {ports["kafka"]}
    assert published["redis"] == {ports["redis"]}
    assert published["flink-jobmanager"] == {ports["flink-rest"]}
    assert published["worker"] == {ports["worker-metrics"]}
    assert published["drift"] == {ports["drift-metrics"]}
    assert published["triton"] == {
        ports["triton-http"],
        ports["triton-grpc"],
        ports["triton-metrics"],
    }
    env = services["worker"]["environment"]
    assert env["STREAMREC_WORKER_METRICS_PORT"] == str(ports["worker-metrics"])
    assert env["STREAMREC_TRITON_URL"] == f"triton:{ports['triton-grpc']}"
    assert services["drift"]["environment"]["STREAMREC_DRIFT_METRICS_PORT"] == str(
        ports["drift-metrics"]
    )


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
