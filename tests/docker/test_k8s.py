"""docker/k8s: each manifest has the shape of its kind, and matches the code and each other.

No cluster and no Kubernetes schema package are installed here, so each kind
is checked against a minimal schema (below) of the fields these manifests use,
plus the cross-references a cluster would catch: selectors, probes, HPA
targets, ConfigMaps, claims, ports and variables.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.docker.manifests import DOCKER, code_env_names, code_ports, k8s_documents

_META = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
}
_CONTAINER = {
    "type": "object",
    "required": ["name", "image"],
    "properties": {
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["containerPort"],
                "properties": {"containerPort": {"type": "integer"}},
            },
        },
        "env": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {"value": {"type": "string"}},
            },
        },
    },
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "Namespace": {"required": ["metadata"]},
    "ConfigMap": {
        "required": ["metadata", "data"],
        "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}},
    },
    "PersistentVolumeClaim": {"required": ["metadata", "spec"]},
    "Service": {
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {"type": "object", "required": ["selector", "ports"]},
        },
    },
    "Deployment": {
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["selector", "template"],
                "properties": {
                    "template": {
                        "type": "object",
                        "required": ["metadata", "spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["containers"],
                                "properties": {
                                    "containers": {"type": "array", "items": _CONTAINER}
                                },
                            }
                        },
                    }
                },
            }
        },
    },
    "HorizontalPodAutoscaler": {
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "autoscaling/v2"},
            "spec": {
                "type": "object",
                "required": ["scaleTargetRef", "minReplicas", "maxReplicas", "metrics"],
            },
        },
    },
}
API_VERSIONS = {
    "Namespace": "v1",
    "ConfigMap": "v1",
    "PersistentVolumeClaim": "v1",
    "Service": "v1",
    "Deployment": "apps/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
}


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for _, d in k8s_documents() if d["kind"] == kind}


def containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, deployment in by_kind("Deployment").items():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            yield name, container


def test_every_manifest_has_its_kinds_shape() -> None:
    documents = k8s_documents()
    assert documents
    for path, doc in documents:
        kind = doc.get("kind")
        assert kind in SCHEMAS, f"{path.name}: unexpected kind {kind}"
        assert doc["apiVersion"] == API_VERSIONS[kind]
        schema = {"type": "object", **SCHEMAS[kind]}
        schema.setdefault("properties", {})["metadata"] = _META
        jsonschema.validate(doc, schema)


def test_kustomization_lists_every_manifest() -> None:
    folder = DOCKER / "k8s"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    files = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files
    images = {image["name"] for image in kustomization["images"]}
    assert {c["image"] for _, c in containers()} <= images


def test_triton_rolls_without_losing_capacity_and_is_ready_on_its_endpoint() -> None:
    triton = by_kind("Deployment")["triton"]
    strategy = triton["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxUnavailable"] == 0
    assert strategy["rollingUpdate"]["maxSurge"] >= 1
    container = triton["spec"]["template"]["spec"]["containers"][0]
    probe = container["readinessProbe"]["httpGet"]
    assert probe["path"] == "/v2/health/ready"
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[probe["port"]] == code_ports()["triton-http"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_autoscalers_target_deployments_that_exist() -> None:
    deployments = by_kind("Deployment")
    for name, hpa in by_kind("HorizontalPodAutoscaler").items():
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["name"] in deployments, name
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert {"triton", "worker"} <= set(by_kind("HorizontalPodAutoscaler"))


def test_services_select_deployment_pods_and_name_their_ports() -> None:
    pod_labels = [
        d["spec"]["template"]["metadata"]["labels"] for d in by_kind("Deployment").values()
    ]
    for name, service in by_kind("Service").items():
        selector = service["spec"]["selector"]
        assert any(selector.items() <= labels.items() for labels in pod_labels), name


def test_selectors_match_their_pod_templates() -> None:
    for name, deployment in by_kind("Deployment").items():
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), name


def test_variables_and_configmaps_are_known() -> None:
    known = code_env_names()
    maps = by_kind("ConfigMap")
    for name, data in ((n, m["data"]) for n, m in maps.items()):
        for variable in data:
            assert variable in known, f"ConfigMap {name} sets {variable}, which no code reads"
    for name, container in containers():
        for variable in container.get("env", []):
            assert variable["name"] in known, (name, variable["name"])
        for source in container.get("envFrom", []):
            assert source["configMapRef"]["name"] in maps, name


def test_ports_and_claims_match() -> None:
    ports = code_ports()
    claims = set(by_kind("PersistentVolumeClaim"))
    exposed = {name: {p["containerPort"] for p in c["ports"]} for name, c in containers()}
    assert exposed["worker"] == {ports["worker-metrics"]}
    assert exposed["drift"] == {ports["drift-metrics"]}
    assert exposed["triton"] == {
        ports["triton-http"],
        ports["triton-grpc"],
        ports["triton-metrics"],
    }
    for deployment in by_kind("Deployment").values():
        for volume in deployment["spec"]["template"]["spec"].get("volumes", []):
            claim = volume.get("persistentVolumeClaim")
            assert claim is None or claim["claimName"] in claims


@pytest.mark.parametrize("path", sorted((DOCKER / "k8s").glob("*.yaml")), ids=lambda p: p.name)
def test_manifest_parses(path: Path) -> None:
    # safe_load_all is lazy: only list() parses (a generator object is always truthy).
    documents = list(yaml.safe_load_all(path.read_text()))
    assert documents
    assert all(isinstance(doc, dict) and doc.get("kind") for doc in documents)


def test_a_malformed_manifest_does_not_parse(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Service\nmetadata: {name: [unclosed\n")
    with pytest.raises(yaml.YAMLError):
        test_manifest_parses(broken)


def test_manifests_pass_the_kubernetes_openapi_schemas() -> None:
    """Full validation with ``kubernetes-validate`` (a dev dependency, about 100 MB of schemas)."""
    import kubernetes_validate as validator  # type: ignore[import-untyped]

    for _path, doc in k8s_documents():
        validator.validate(doc, "1.33.0", strict=True)  # raises on the first error
