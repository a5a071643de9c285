"""docker/k8s: each manifest has the shape of its kind, and matches the code and each other.

No cluster is available here, so each kind is checked against a minimal schema
(below) of the fields these manifests use, plus the cross-references a cluster
would catch: selectors, probes, HPA targets, ConfigMaps, claims, ports and
variables. Built-in kinds also pass the Kubernetes OpenAPI schemas
(``kubernetes-validate``); the FlinkDeployment custom resource is checked by
structure (tests/docker/test_k8s_flink.py) and its pod templates as Pods.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.docker.manifests import DOCKER, code_env_names, code_ports, compose, k8s_documents

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
    # The Flink Kubernetes Operator's custom resource: the fields it needs to run an
    # application cluster (its CRD is not installed here).
    "FlinkDeployment": {
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": [
                    "image",
                    "flinkVersion",
                    "flinkConfiguration",
                    "job",
                    "jobManager",
                    "taskManager",
                ],
                "properties": {
                    "flinkConfiguration": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                    },
                    "job": {
                        "type": "object",
                        "required": ["jarURI", "entryClass", "args", "upgradeMode"],
                        "properties": {
                            "upgradeMode": {"enum": ["stateless", "savepoint", "last-state"]},
                            "args": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    **{
                        role: {
                            "type": "object",
                            "required": ["resource", "podTemplate"],
                            "properties": {
                                "resource": {"type": "object", "required": ["cpu", "memory"]},
                                "podTemplate": {
                                    "type": "object",
                                    "required": ["metadata", "spec"],
                                    "properties": {
                                        "spec": {
                                            "type": "object",
                                            "required": ["containers"],
                                            "properties": {
                                                "containers": {
                                                    "type": "array",
                                                    "items": {
                                                        **_CONTAINER,
                                                        "required": ["name"],
                                                    },
                                                }
                                            },
                                        }
                                    },
                                },
                            },
                        }
                        for role in ("jobManager", "taskManager")
                    },
                },
            }
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
    "FlinkDeployment": "flink.apache.org/v1beta1",
}
# Custom resources: no OpenAPI schema of Kubernetes' own knows them.
CUSTOM_KINDS = {"FlinkDeployment"}
FLINK_ROLES = ("jobManager", "taskManager")
# Variables whose values are credentials: only ever from a Secret, by reference.
SECRET_VARIABLES = {
    "STREAMREC_REDIS_URL",
    "STREAMREC_WORKER_REDIS_READ_URL",
    "STREAMREC_KAFKA_CONFIG",
    "STREAMREC_KAFKA_JAVA_CONFIG",
    "STREAMREC_TRITON_CONTROL_KEY",
}
# Images built from this repository's Dockerfiles, and the one pulled from NVIDIA.
OWN_IMAGES = {"streamrec-app", "streamrec-flink"}
TRITON_IMAGE = "tritonserver"
PROMETHEUS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for _, d in k8s_documents() if d["kind"] == kind}


def pod_templates() -> dict[str, dict[str, Any]]:
    """Every pod template: a Deployment's by its name, a FlinkDeployment role's as name/role."""
    templates = {name: d["spec"]["template"] for name, d in by_kind("Deployment").items()}
    for name, flink in by_kind("FlinkDeployment").items():
        for role in FLINK_ROLES:
            templates[f"{name}/{role}"] = flink["spec"][role]["podTemplate"]
    return templates


def pod_image(pod: str) -> str:
    """The image a pod's (first) container runs: a FlinkDeployment names it once, for all."""
    if "/" in pod:
        return str(by_kind("FlinkDeployment")[pod.split("/")[0]]["spec"]["image"])
    return str(pod_templates()[pod]["spec"]["containers"][0]["image"])


def containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, template in pod_templates().items():
        for container in template["spec"]["containers"]:
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
    assert {pod_image(pod) for pod in pod_templates()} <= images
    # kustomize rewrites only built-in kinds' image fields unless told where a custom
    # resource keeps its image.
    field_specs = [
        spec
        for config in kustomization["configurations"]
        for spec in yaml.safe_load((folder / config).read_text())["images"]
    ]
    for kind in CUSTOM_KINDS:
        assert {"path": "spec/image", "kind": kind} in field_specs


def dockerfile_tag(dockerfile: str) -> str:
    """The image name a Dockerfile's build line (``docker build ... -t NAME .``) gives."""
    text = (DOCKER / dockerfile).read_text(encoding="utf-8")
    (tag,) = re.findall(r"docker build .* -t ([a-z0-9-]+) \.", text)
    return str(tag)


def test_images_are_the_projects_or_tritons() -> None:
    own = {dockerfile_tag("app.Dockerfile"), dockerfile_tag("flink.Dockerfile")}
    assert own == OWN_IMAGES
    for pod in pod_templates():
        assert pod_image(pod) in OWN_IMAGES | {TRITON_IMAGE}, pod
    # Untagged here: kustomization.yaml's images set the tag (and the registry).
    assert pod_image("feature-writer") == dockerfile_tag("app.Dockerfile")
    for name in by_kind("FlinkDeployment"):
        assert pod_image(f"{name}/jobManager") == dockerfile_tag("flink.Dockerfile")
    for name, container in containers():
        if "/" in name:
            assert "image" not in container, f"{name}: the FlinkDeployment's image is the one"


def test_every_pod_runs_unprivileged() -> None:
    for pod, template in pod_templates().items():
        spec = template["spec"]
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True, pod
        assert isinstance(context["runAsUser"], int) and context["runAsUser"] > 0, pod
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}, pod
        writable = {
            mount["mountPath"]
            for container in spec["containers"]
            for mount in container.get("volumeMounts", [])
        }
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, pod
            assert security["capabilities"]["drop"] == ["ALL"], pod
            if pod_image(pod) in OWN_IMAGES:
                assert security["readOnlyRootFilesystem"] is True, pod
                assert "/tmp" in writable, f"{pod}: a read-only root needs a writable /tmp"
    # The app image's user (app.Dockerfile: useradd --uid 10001).
    app_user = re.search(r"--uid (\d+)", (DOCKER / "app.Dockerfile").read_text())
    assert app_user is not None
    for pod in pod_templates():
        if pod_image(pod) == "streamrec-app":
            uid = pod_templates()[pod]["spec"]["securityContext"]["runAsUser"]
            assert uid == int(app_user.group(1)), pod


def test_every_container_has_resources() -> None:
    for name, deployment in by_kind("Deployment").items():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), name
            assert "memory" in resources["limits"], name
    # The operator sizes the Flink pods (requests and limits) from each role's resource.
    for name, flink in by_kind("FlinkDeployment").items():
        for role in FLINK_ROLES:
            assert {"cpu", "memory"} <= set(flink["spec"][role]["resource"]), (name, role)


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
    exposed = {name: {p["containerPort"] for p in c.get("ports", [])} for name, c in containers()}
    assert exposed["worker"] == {ports["worker-metrics"]}
    assert exposed["drift"] == {ports["drift-metrics"]}
    assert exposed["outcome"] == {ports["outcome-metrics"]}
    assert exposed["triton"] == {
        ports["triton-http"],
        ports["triton-grpc"],
        ports["triton-metrics"],
    }
    assert exposed["feature-writer"] == {ports["writer-metrics"]}  # its only listener
    for pod, template in pod_templates().items():
        volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
        for volume in volumes.values():
            claim = volume.get("persistentVolumeClaim")
            assert claim is None or claim["claimName"] in claims, pod
        for container in template["spec"]["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, (pod, mount["name"])


def test_probes_ask_ports_the_container_names() -> None:
    for name, container in containers():
        named = {p["name"] for p in container.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            for handler in ("httpGet", "tcpSocket"):
                if handler in container.get(probe, {}):
                    assert container[probe][handler]["port"] in named, (name, probe)
    # The writer's only endpoint is /metrics: ready once it serves (after Kafka answered).
    (writer,) = pod_templates()["feature-writer"]["spec"]["containers"]
    assert writer["readinessProbe"]["tcpSocket"]["port"] == "metrics"
    assert not {"livenessProbe", "startupProbe"} & set(writer)


def test_writers_are_no_more_than_the_changelogs_partitions() -> None:
    from jobs.features.cli import CHANGELOG_PARTITIONS

    writer = by_kind("Deployment")["feature-writer"]
    assert 1 <= writer["spec"]["replicas"] <= CHANGELOG_PARTITIONS
    (container,) = writer["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "jobs.feature_writer"]


def test_the_outcome_job_is_one_kafka_only_instance() -> None:
    outcome = by_kind("Deployment")["outcome"]
    # Its join state is in memory: a second instance would split a user's records.
    assert outcome["spec"]["replicas"] == 1
    assert outcome["spec"]["strategy"]["type"] == "Recreate"
    (container,) = outcome["spec"]["template"]["spec"]["containers"]
    assert container["command"] == compose()["services"]["outcome"]["command"]
    assert container["command"] == ["python", "-m", "jobs.outcomes"]
    # Kafka only: no Redis URL, no Triton key, no artifacts.
    assert set(env_of("outcome")) == {"STREAMREC_KAFKA_CONFIG"}
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/tmp"]


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
    """Full validation with ``kubernetes-validate`` (a dev dependency, about 100 MB of schemas).

    A FlinkDeployment's pod templates are Pods the operator completes (its main
    container gets the image and command there): each is validated as a Pod.
    """
    import kubernetes_validate as validator  # type: ignore[import-untyped]

    for _path, doc in k8s_documents():
        if doc["kind"] not in CUSTOM_KINDS:
            validator.validate(doc, "1.33.0", strict=True)  # raises on the first error
    for name, flink in by_kind("FlinkDeployment").items():
        for role in FLINK_ROLES:
            pod = {**flink["spec"][role]["podTemplate"]}
            pod["metadata"] = {"name": f"{name}-{role.lower()}", **pod["metadata"]}
            validator.validate(pod, "1.33.0", strict=True)


def test_custom_resources_are_known() -> None:
    assert {doc["kind"] for _, doc in k8s_documents()} & CUSTOM_KINDS == {"FlinkDeployment"}


def env_of(pod: str) -> dict[str, dict[str, Any]]:
    (container,) = pod_templates()[pod]["spec"]["containers"]
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

    for deployment in ("worker", "feature-writer"):
        assert secret(deployment, "STREAMREC_REDIS_URL") == ("streamrec-redis", "url")
    read_url = env_of("worker")["STREAMREC_WORKER_REDIS_READ_URL"]["valueFrom"]["secretKeyRef"]
    assert read_url == {"name": "streamrec-redis", "key": "read-url", "optional": True}
    for deployment in ("worker", "drift", "outcome", "feature-writer", "feature-job/jobManager"):
        assert secret(deployment, "STREAMREC_KAFKA_CONFIG") == ("streamrec-kafka", "config")
    assert secret("feature-job/jobManager", "STREAMREC_KAFKA_JAVA_CONFIG") == (
        "streamrec-kafka",
        "java-config",
    )
    assert secret("triton", "STREAMREC_TRITON_CONTROL_KEY") == ("streamrec-triton", "control-key")
    # Every credential a pod gets comes so, whichever pod it is.
    for name, container in containers():
        for item in container.get("env", []):
            if item["name"] in SECRET_VARIABLES:
                assert set(item["valueFrom"]) == {"secretKeyRef"}, (name, item["name"])


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
    outcome = by_kind("ConfigMap")["streamrec-outcome-config"]["data"]
    assert outcome["STREAMREC_OUTCOME_METRICS_HOST"] == "0.0.0.0"
    assert outcome["STREAMREC_OUTCOME_METRICS_PORT"] == str(code_ports()["outcome-metrics"])
    writer = env_of("feature-writer")
    assert writer["STREAMREC_FEATURE_WRITER_METRICS_HOST"]["value"] == "0.0.0.0"
    port = str(code_ports()["writer-metrics"])
    assert writer["STREAMREC_FEATURE_WRITER_METRICS_PORT"]["value"] == port
    annotations = pod_templates()["feature-writer"]["metadata"]["annotations"]
    assert annotations == {"prometheus.io/scrape": "true", "prometheus.io/port": port}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def allowed(pod: str, port: str | int) -> list[dict[str, Any]]:
    """The peers the namespace's policies let reach ``pod``'s ``port`` (a name or number)."""
    labels = pod_templates()[pod]["metadata"]["labels"]
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
    assert allowed("outcome", "metrics") == allowed("feature-writer", "metrics") == [PROMETHEUS]
    assert [p["podSelector"]["matchLabels"] for p in allowed("triton", "http")] == [
        {"app.kubernetes.io/name": "serving"}
    ]
    redis = by_kind("NetworkPolicy")["redis-ingress"]["spec"]["ingress"]
    (peer,) = redis[0]["from"]
    assert _selects(peer["podSelector"], {"app.kubernetes.io/name": "worker"})
    assert not _selects(peer["podSelector"], {"app.kubernetes.io/name": "drift"})
    assert not _selects(peer["podSelector"], {"app.kubernetes.io/name": "outcome"})
    assert [p["port"] for p in redis[0]["ports"]] == [code_ports()["redis"]]


def flink_ports(pod: str) -> set[int]:
    """The ports a Flink pod's configuration fixes (the operator adds them to its pods)."""
    if "/" not in pod:
        return set()
    config = by_kind("FlinkDeployment")[pod.split("/")[0]]["spec"]["flinkConfiguration"]
    return {int(value) for key, value in config.items() if key.endswith("port")}


def test_policy_ports_are_ports_the_pods_name() -> None:
    for name, policy in by_kind("NetworkPolicy").items():
        for pod, template in pod_templates().items():
            labels = template["metadata"]["labels"]
            if not policy["spec"]["podSelector"] or not _selects(
                policy["spec"]["podSelector"], labels
            ):
                continue
            named = {p["name"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
            for rule in policy["spec"]["ingress"]:
                for port in rule["ports"]:
                    if isinstance(port["port"], int):
                        assert port["port"] in flink_ports(pod), (name, pod, port)
                    else:
                        assert port["port"] in named, (name, pod, port)


def test_the_writer_lets_in_only_prometheus_on_its_metrics_port() -> None:
    labels = pod_templates()["feature-writer"]["metadata"]["labels"]
    selecting = {
        name
        for name, policy in by_kind("NetworkPolicy").items()
        if _selects(policy["spec"]["podSelector"], labels)
    }
    assert selecting == {"default-deny-ingress", "metrics-scrape"}
    assert allowed("feature-writer", "metrics") == [PROMETHEUS]
    # Its egress is open (no policy restricts egress): Kafka and Redis let it in.
    kafka = by_kind("NetworkPolicy")["kafka-ingress"]["spec"]["ingress"][0]["from"][0]
    assert _selects(kafka["podSelector"], labels)
    redis = by_kind("NetworkPolicy")["redis-ingress"]["spec"]["ingress"][0]["from"][0]
    assert _selects(redis["podSelector"], labels)


def test_the_flink_cluster_reaches_itself_and_its_rest_api_stays_inside() -> None:
    jobmanager, taskmanager = "feature-job/jobManager", "feature-job/taskManager"
    itself = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "feature-job"}}}
    config = by_kind("FlinkDeployment")["feature-job"]["spec"]["flinkConfiguration"]
    internal = [
        int(config[key])
        for key in (
            "jobmanager.rpc.port",
            "blob.server.port",
            "taskmanager.rpc.port",
            "taskmanager.data.port",
        )
    ]
    for pod in (jobmanager, taskmanager):
        for port in internal:
            assert allowed(pod, port) == [itself], (pod, port)
        assert allowed(pod, "metrics") == [PROMETHEUS]
    rest = int(config["rest.port"])
    assert rest == code_ports()["flink-rest"]
    assert int(config["jobmanager.rpc.port"]) == code_ports()["flink-rpc"]
    assert allowed(taskmanager, rest) == []
    peers = allowed(jobmanager, rest)
    assert {"podSelector": {}} in peers  # this namespace only (no namespaceSelector)
    others = [p for p in peers if p != {"podSelector": {}}]
    assert others and all(
        p["namespaceSelector"]["matchLabels"] and p["podSelector"]["matchLabels"] for p in others
    ), "the operator's pods, not its whole namespace or every namespace"
    # Kafka lets the job in: its pods are the pipeline's.
    kafka = by_kind("NetworkPolicy")["kafka-ingress"]["spec"]["ingress"][0]["from"][0]
    for pod in (jobmanager, taskmanager):
        assert _selects(kafka["podSelector"], pod_templates()[pod]["metadata"]["labels"])
