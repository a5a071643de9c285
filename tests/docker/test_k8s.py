"""docker/k8s: each manifest has the shape of its kind, and matches the code and each other.

No cluster and no Kubernetes schema package are installed here, so each kind
is checked against a minimal schema (below) of the fields these manifests use,
plus the cross-references a cluster would catch: selectors, probes, HPA
targets, ConfigMaps, claims, ports and variables.
"""

from __future__ import annotations

import re
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
                "required": ["name"],
                "properties": {
                    "value": {"type": "string"},
                    "valueFrom": {
                        "type": "object",
                        "required": ["secretKeyRef"],
                        "properties": {
                            "secretKeyRef": {"type": "object", "required": ["name", "key"]}
                        },
                    },
                },
                "oneOf": [{"required": ["value"]}, {"required": ["valueFrom"]}],
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
    "NetworkPolicy": {
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {"type": "object", "required": ["podSelector", "policyTypes"]},
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
    "NetworkPolicy": "networking.k8s.io/v1",
}
# Variables whose values are credentials: only ever from a Secret, by reference.
SECRET_VARIABLES = {"STREAMREC_REDIS_URL", "STREAMREC_KAFKA_CONFIG", "STREAMREC_TRITON_CONTROL_KEY"}
PROMETHEUS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
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


def env_of(deployment: str) -> dict[str, dict[str, Any]]:
    (container,) = by_kind("Deployment")[deployment]["spec"]["template"]["spec"]["containers"]
    return {item["name"]: item for item in container.get("env", [])}


def test_no_secret_is_written_in_a_manifest() -> None:
    assert not by_kind("Secret"), "Secrets are created in the cluster, not kept here"
    for name, config in by_kind("ConfigMap").items():
        assert not SECRET_VARIABLES & set(config["data"]), name
        for value in config["data"].values():
            assert not re.search(r"://[^/@\s]*:[^/@\s]*@", value), (name, value)
    for name, container in containers():
        for item in container.get("env", []):
            if item["name"] in SECRET_VARIABLES:
                assert "value" not in item, f"{name} writes {item['name']} in"


def test_secrets_come_by_secret_key_ref() -> None:
    def secret(deployment: str, variable: str) -> tuple[str, str]:
        ref = env_of(deployment)[variable]["valueFrom"]["secretKeyRef"]
        return ref["name"], ref["key"]

    assert secret("worker", "STREAMREC_REDIS_URL") == ("streamrec-redis", "url")
    for deployment in ("worker", "drift"):
        assert secret(deployment, "STREAMREC_KAFKA_CONFIG") == ("streamrec-kafka", "config")
    assert secret("triton", "STREAMREC_TRITON_CONTROL_KEY") == ("streamrec-triton", "control-key")


def test_tritons_model_control_needs_the_key_from_its_secret() -> None:
    (container,) = by_kind("Deployment")["triton"]["spec"]["template"]["spec"]["containers"]
    for flag in ("--grpc-restricted-protocol=", "--http-restricted-api="):
        (rule,) = [a.removeprefix(flag) for a in container["args"] if a.startswith(flag)]
        protocols, key = rule.split(":", 1)
        assert "model-repository" in protocols.split(",")
        assert key == "streamrec-control-key=$(STREAMREC_TRITON_CONTROL_KEY)"


def test_metrics_listen_on_the_pod_address() -> None:
    assert env_of("worker")["STREAMREC_WORKER_METRICS_HOST"]["value"] == "0.0.0.0"
    drift = by_kind("ConfigMap")["streamrec-drift-config"]["data"]
    assert drift["STREAMREC_DRIFT_METRICS_HOST"] == "0.0.0.0"


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def allowed(pod: str, port: str) -> list[dict[str, Any]]:
    """The peers the namespace's policies let reach ``pod``'s named ``port``."""
    labels = by_kind("Deployment")[pod]["spec"]["template"]["metadata"]["labels"]
    peers = []
    for policy in by_kind("NetworkPolicy").values():
        if _selects(policy["spec"]["podSelector"], labels):
            for rule in policy["spec"].get("ingress", []):
                if any(p["port"] == port for p in rule["ports"]):
                    peers += rule["from"]
    return peers


def test_ingress_is_denied_by_default() -> None:
    deny = by_kind("NetworkPolicy")["default-deny-ingress"]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress"]}
    for name, policy in by_kind("NetworkPolicy").items():
        assert policy["spec"]["policyTypes"] == ["Ingress"], name
        for rule in policy["spec"].get("ingress", []):
            assert rule.get("from") and rule.get("ports"), f"{name} lets anybody in"


def test_policies_let_in_only_what_the_pipeline_needs() -> None:
    worker = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "worker"}}}
    assert allowed("triton", "grpc") == [worker]
    assert allowed("triton", "metrics") == [PROMETHEUS]
    assert allowed("worker", "metrics") == allowed("drift", "metrics") == [PROMETHEUS]
    assert [p["podSelector"]["matchLabels"] for p in allowed("triton", "http")] == [
        {"app.kubernetes.io/name": "serving"}
    ]
    redis = by_kind("NetworkPolicy")["redis-ingress"]["spec"]["ingress"]
    (peer,) = redis[0]["from"]
    assert _selects(peer["podSelector"], {"app.kubernetes.io/name": "worker"})
    assert not _selects(peer["podSelector"], {"app.kubernetes.io/name": "drift"})
    assert [p["port"] for p in redis[0]["ports"]] == [code_ports()["redis"]]


def test_policy_ports_are_ports_the_pods_name() -> None:
    deployments = by_kind("Deployment")
    for name, policy in by_kind("NetworkPolicy").items():
        for deployment in deployments.values():
            labels = deployment["spec"]["template"]["metadata"]["labels"]
            if not policy["spec"]["podSelector"] or not _selects(
                policy["spec"]["podSelector"], labels
            ):
                continue
            named = {
                p["name"]
                for c in deployment["spec"]["template"]["spec"]["containers"]
                for p in c.get("ports", [])
            }
            for rule in policy["spec"]["ingress"]:
                for port in rule["ports"]:
                    assert port["port"] in named, (name, port)
