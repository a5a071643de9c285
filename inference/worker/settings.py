"""The worker's one frozen settings object: environment first, command-line flags over it.

Kafka comes from :meth:`schemas.kafka.KafkaSettings.from_env`; everything else from
``STREAMREC_*`` variables (listed by ``python -m inference.worker --help``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from inference.worker.errors import SettingsError
from schemas.kafka import ENV_PREFIX, KafkaSettings
from schemas.topics import REC_REQUESTS, RECOMMENDATIONS

WORKER_PREFIX = ENV_PREFIX + "WORKER_"
SCORERS = ("triton", "onnx")


@dataclass(frozen=True)
class WorkerSettings:
    """Where requests come from and answers go, where features and the ranker are, and limits."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    requests_topic: str = REC_REQUESTS
    output_topic: str = RECOMMENDATIONS
    group_id: str = "streamrec-worker"
    redis_url: str = "redis://127.0.0.1:6379/0"
    # The Feast project of feature_store.yaml; online keys are namespaced by it.
    project: str = "streamrec"
    triton_url: str = "127.0.0.1:8001"
    triton_model: str = "ranker"
    model_dir: Path = Path(".cache/ranker")
    # triton = the served ranker; onnx = the same ONNX file in process (the benchmark's ceiling).
    scorer: str = "triton"
    batch_size: int = 128
    batch_timeout_ms: int = 5
    # Users per Triton request; a micro-batch is split into chunks sent concurrently.
    users_per_request: int = 16
    max_inflight: int = 4
    triton_timeout_ms: int = 1000
    redis_timeout_ms: int = 200
    # After a failure the dependency is skipped (fallback) for this long, then probed again.
    retry_after_ms: int = 1000
    embedding_candidates: int = 40
    trend_candidates: int = 40
    popular_candidates: int = 50
    max_candidates: int = 100
    max_per_category: int = 3
    exactly_once: bool = False
    transactional_id: str = ""
    metrics_port: int = 9108

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {"kafka": KafkaSettings.from_env(env)}
        # Shared names without the WORKER_ part: every process reads the same variable.
        shared = {
            "redis_url": "REDIS_URL",
            "triton_url": "TRITON_URL",
            "triton_model": "TRITON_MODEL",
            "model_dir": "MODEL_DIR",
        }
        for item in fields(cls):
            if item.name == "kafka":
                continue
            name = ENV_PREFIX + shared[item.name] if item.name in shared else env_name(item.name)
            if name in env and env[name].strip() != "":
                values[item.name] = _convert(item.name, env[name].strip())
        return cls(**values).validated()

    def validated(self) -> WorkerSettings:
        positive = (
            "batch_size", "batch_timeout_ms", "users_per_request", "max_inflight",
            "triton_timeout_ms", "redis_timeout_ms", "max_candidates", "max_per_category",
        )  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.scorer not in SCORERS:
            raise SettingsError(f"scorer must be one of {SCORERS}, got {self.scorer!r}")
        return self

    @property
    def effective_transactional_id(self) -> str:
        """One id per worker instance: a restarted instance fences its previous self."""
        return self.transactional_id or f"{self.group_id}-{os.getpid()}"

    def describe(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "kafka"}
        shown["redis_url"] = _mask(self.redis_url)
        return f"{self.kafka.describe()} " + " ".join(f"{k}={v}" for k, v in shown.items())


def env_name(field_name: str) -> str:
    return WORKER_PREFIX + field_name.upper()


def _convert(name: str, text: str) -> Any:
    kind = {f.name: f.type for f in fields(WorkerSettings)}[name]
    converters: dict[str, Callable[[str], Any]] = {
        "int": int,
        "bool": lambda t: t.lower() in ("1", "true", "yes", "on"),
        "Path": Path,
        "str": str,
    }
    try:
        return converters[str(kind)](text)
    except ValueError:
        raise SettingsError(f"{name}: cannot read {text!r} as {kind}") from None


def _mask(url: str) -> str:
    head, sep, tail = url.rpartition("@")
    return f"{head.split('//')[0]}//***@{tail}" if sep else url


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m inference.worker",
        description=(
            "Consume recommendation requests from Kafka in micro-batches, read features from "
            "Redis (Feast's format), recall candidates (Faiss, category trends, the request, "
            "popular items), rank them on Triton, post-process and produce recommendations. "
            "Every flag defaults to its environment variable (shown in brackets)."
        ),
    )
    defaults = WorkerSettings()
    for item in fields(WorkerSettings):
        if item.name == "kafka":
            continue
        shared = {"redis_url", "triton_url", "triton_model", "model_dir"}
        env = ENV_PREFIX + item.name.upper() if item.name in shared else env_name(item.name)
        flag = "--" + item.name.replace("_", "-")
        if str(item.type) == "bool":
            parser.add_argument(flag, action="store_true", default=None, help=f"[{env}]")
        else:
            shown = getattr(defaults, item.name)
            parser.add_argument(flag, default=None, help=f"[{env}] default {shown}")
    parser.add_argument(
        "--log-level", default=os.environ.get(ENV_PREFIX + "LOG_LEVEL", "INFO"),
        help="[STREAMREC_LOG_LEVEL] logging level",
    )  # fmt: skip
    return parser


def settings_from(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> WorkerSettings:
    """The environment's settings with the flags that were given on top."""
    base = WorkerSettings.from_env(environ)
    given = {
        item.name: _convert(item.name, str(getattr(args, item.name)))
        for item in fields(WorkerSettings)
        if item.name != "kafka" and getattr(args, item.name, None) is not None
    }
    return replace(base, **given).validated()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)
