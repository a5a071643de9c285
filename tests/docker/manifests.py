"""Readers for docker/: compose file, Kubernetes manifests, Dockerfiles, what the code reads.

The checks compare the deployment files with the code itself: the
``STREAMREC_*`` variables it reads (literal names plus the names its settings
objects derive from their fields), its default ports, and the Prometheus
metrics its registries export.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
CODE_DIRS = ("schemas", "runtime", "jobs", "inference", "feature_repo")
_LITERAL = re.compile(r"STREAMREC_[A-Z0-9_]*[A-Z0-9]")
# The feature writer builds names as WRITER_PREFIX + "NAME" or _int(env, "NAME", ...).
_WRITER_SUFFIX = re.compile(r'(?:WRITER_PREFIX \+ |_(?:int|float)\(env, )"([A-Z0-9_]+)"')


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def k8s_documents() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, doc)
        for path in sorted((DOCKER / "k8s").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in load_yaml_documents(path)
    ]


def code_env_names() -> set[str]:
    """Every ``STREAMREC_*`` variable the code reads."""
    names: set[str] = set()
    for folder in CODE_DIRS:
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            names.update(_LITERAL.findall(text))
            if path.name == "settings.py" and "WRITER_PREFIX" in text:
                names.update("STREAMREC_FEATURE_WRITER_" + s for s in _WRITER_SUFFIX.findall(text))
    return names | _derived_env_names()


def _derived_env_names() -> set[str]:
    """Names settings objects derive from their field names."""
    from inference.worker import settings as worker
    from jobs.drift import settings as drift
    from jobs.features.settings import ENV_PREFIX as FEATURES_PREFIX
    from jobs.features.settings import FeatureJobSettings

    derived = {worker.env_name(f.name) for f in fields(worker.WorkerSettings)}
    derived |= {drift.env_name(f.name) for f in fields(drift.DriftSettings)}
    derived |= {FEATURES_PREFIX + f.name.upper() for f in fields(FeatureJobSettings)}
    return derived


def code_ports() -> dict[str, int]:
    """The default port of each process, read from the code."""
    from inference.worker.settings import WorkerSettings
    from jobs.drift.settings import DriftSettings
    from jobs.feature_writer.settings import WriterSettings
    from jobs.localstack.settings import StackSettings
    from jobs.outcomes.settings import OutcomeSettings

    stack = StackSettings(home=Path(), cache_dir=Path())
    return {
        "kafka": stack.kafka_port,
        "redis": stack.redis_port,
        "flink-rest": stack.flink_rest_port,
        "flink-rpc": stack.flink_rpc_port,
        "worker-metrics": WorkerSettings().metrics_port,
        "drift-metrics": DriftSettings().metrics_port,
        "outcome-metrics": OutcomeSettings().metrics_port,
        "writer-metrics": WriterSettings().metrics_port,
        "triton-http": 8000,
        "triton-grpc": 8001,
        "triton-metrics": 8002,
    }


def dockerfiles() -> list[Path]:
    return sorted(DOCKER.glob("*.Dockerfile"))


def copy_sources(dockerfile: Path) -> list[str]:
    """Build-context sources of every ``COPY`` (``--from`` copies read another stage)."""
    sources = []
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if not words or words[0] != "COPY" or any(w.startswith("--from") for w in words):
            continue
        sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources
