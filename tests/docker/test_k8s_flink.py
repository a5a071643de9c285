"""docker/k8s/feature-job.yaml: the FlinkDeployment runs the project's job, its way.

The operator's CRD is not installed here, so the resource is checked by
structure against what it must agree with: the Flink version pinned in
pyproject.toml, docker/flink.Dockerfile's image (its Flink home, config dir,
jars), compose's submission of the same job, the job's own settings, and the
claim its checkpoints go to.
"""

from __future__ import annotations

import re
from typing import Any

from tests.docker.manifests import DOCKER, REPO, compose
from tests.docker.test_k8s import by_kind, env_of, pod_templates

FLINK = "feature-job"
CREDENTIAL_KEYS = re.compile(r"password|secret|jaas|token|credential|sasl", re.IGNORECASE)
CREDENTIAL_URL = re.compile(r"://[^/@\s]*:[^/@\s]*@")


def spec() -> dict[str, Any]:
    result: dict[str, Any] = by_kind("FlinkDeployment")[FLINK]["spec"]
    return result


def flink_version() -> str:
    """apache-flink's pinned version (pyproject.toml's flink extra)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    (version,) = re.findall(r'"apache-flink==([0-9.]+)"', text)
    return str(version)


def dockerfile_env(name: str) -> str:
    text = (DOCKER / "flink.Dockerfile").read_text(encoding="utf-8")
    (value,) = re.findall(rf"\b{name}=(\S+)", text)
    return str(value)


def test_the_flink_version_is_the_projects() -> None:
    major, minor, _patch = flink_version().split(".")
    assert spec()["flinkVersion"] == f"v{major}_{minor}"


def test_the_image_is_flink_dockerfiles() -> None:
    text = (DOCKER / "flink.Dockerfile").read_text(encoding="utf-8")
    assert re.search(rf"docker build .* -t {spec()['image']} \.", text)
    config = spec()["flinkConfiguration"]
    # The image has no /docker-entrypoint.sh (the operator's default entry point).
    assert "docker-entrypoint" not in text
    assert config["kubernetes.entry.path"] == "/usr/bin/env"
    # The operator's generated config lands where the image's scripts read it.
    assert config["kubernetes.flink.conf.dir"] == dockerfile_env("FLINK_CONF_DIR")


def test_the_job_is_the_pyflink_driver_of_jobs_features() -> None:
    job = spec()["job"]
    flink_home = dockerfile_env("FLINK_HOME")
    assert job["jarURI"] == f"local://{flink_home}/opt/flink-python-{flink_version()}.jar"
    assert job["entryClass"] == "org.apache.flink.client.python.PythonDriver"
    args = job["args"]
    assert args[args.index("-pym") + 1] == "jobs.features"
    # The same jars compose's submitter hands the job (both come from the image).
    submitter = compose()["services"]["feature-job"]["command"]
    jars = [submitter[i + 1] for i, a in enumerate(submitter) if a == "--jar"]
    assert jars and [args[i + 1] for i, a in enumerate(args) if a == "--jar"] == jars
    # The operator restores state; the local CLI's restoring is not used.
    assert "--restore-from" not in args
    assert job["state"] == "running"


def test_upgrades_resume_from_the_latest_checkpoint() -> None:
    assert spec()["job"]["upgradeMode"] == "last-state"
    config = spec()["flinkConfiguration"]
    checkpoints = config.get("execution.checkpointing.dir") or config.get("state.checkpoints.dir")
    assert checkpoints, "last-state needs a checkpoint directory"
    assert config["execution.checkpointing.interval"]
    assert config["execution.checkpointing.savepoint-dir"]
    # last-state needs Kubernetes HA: the latest checkpoint's pointer lives there.
    assert config["high-availability.type"] == "kubernetes"
    ha = config["high-availability.storageDir"]
    # Every path is durable and seen by every pod: on the shared claim they all mount.
    claims = by_kind("PersistentVolumeClaim")
    for path in (checkpoints, config["execution.checkpointing.savepoint-dir"], ha):
        assert path.startswith("file:///"), path
        for role in ("jobManager", "taskManager"):
            template = pod_templates()[f"{FLINK}/{role}"]["spec"]
            volumes = {v["name"]: v for v in template["volumes"]}
            (container,) = template["containers"]
            (mount,) = [
                m
                for m in container["volumeMounts"]
                if path.removeprefix("file://").startswith(m["mountPath"] + "/")
            ]
            claim = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
            assert claims[claim]["spec"]["accessModes"] == ["ReadWriteMany"], claim


def test_the_jobs_settings_agree_with_the_cluster() -> None:
    env = env_of(f"{FLINK}/jobManager")
    # The job sets its own parallelism from its variable; the operator sizes by job.parallelism.
    assert int(env["STREAMREC_FEATURES_PARALLELISM"]["value"]) == spec()["job"]["parallelism"]
    # A job-level checkpoint dir (a local path) would override the cluster's.
    assert "STREAMREC_FEATURES_CHECKPOINT_DIR" not in env
    (container,) = pod_templates()[f"{FLINK}/jobManager"]["spec"]["containers"]
    assert [s["configMapRef"]["name"] for s in container["envFrom"]] == ["streamrec-config"]
    # Prometheus reporter on the port docker/flink/config.yaml uses, named for the policies.
    reporter = spec()["flinkConfiguration"]["metrics.reporter.prom.port"]
    compose_config = (DOCKER / "flink" / "config.yaml").read_text(encoding="utf-8")
    assert f'port: "{reporter}"' in compose_config
    for role in ("jobManager", "taskManager"):
        (main,) = pod_templates()[f"{FLINK}/{role}"]["spec"]["containers"]
        assert main["name"] == "flink-main-container"  # the name the operator merges into
        assert {p["name"]: p["containerPort"] for p in main["ports"]} == {"metrics": int(reporter)}


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return [node] if isinstance(node, str) else []


def test_no_secret_is_written_in_the_flink_deployment() -> None:
    resource = by_kind("FlinkDeployment")[FLINK]
    for key in spec()["flinkConfiguration"]:
        assert not CREDENTIAL_KEYS.search(key), f"{key}: credentials come from a Secret"
    for text in _strings(resource):
        assert not CREDENTIAL_URL.search(text), text
        assert "sasl.jaas.config" not in text and "password=" not in text.lower(), text
    for role in ("jobManager", "taskManager"):
        (container,) = pod_templates()[f"{FLINK}/{role}"]["spec"]["containers"]
        for item in container.get("env", []):
            if "value" in item:
                assert not CREDENTIAL_KEYS.search(item["name"]), item["name"]
