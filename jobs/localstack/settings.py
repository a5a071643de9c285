"""Where the local stack lives and which ports it uses, read once from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.errors import StackError

HOME_ENV = "STREAMREC_STACK_HOME"
CACHE_ENV = "STREAMREC_CACHE_DIR"
KAFKA_PORT_ENV = "STREAMREC_KAFKA_PORT"
KAFKA_CONTROLLER_PORT_ENV = "STREAMREC_KAFKA_CONTROLLER_PORT"
REDIS_PORT_ENV = "STREAMREC_REDIS_PORT"
FLINK_REST_PORT_ENV = "STREAMREC_FLINK_REST_PORT"
FLINK_RPC_PORT_ENV = "STREAMREC_FLINK_RPC_PORT"
TRITON_HTTP_PORT_ENV = "STREAMREC_TRITON_HTTP_PORT"
TRITON_GRPC_PORT_ENV = "STREAMREC_TRITON_GRPC_PORT"
TRITON_METRICS_PORT_ENV = "STREAMREC_TRITON_METRICS_PORT"
TRITON_MODEL_REPOSITORY_ENV = "STREAMREC_TRITON_MODEL_REPOSITORY"
TRITON_MODELS_ENV = "STREAMREC_TRITON_MODELS"

# Loopback only: the stack is for one developer machine, never for a network.
HOST = "127.0.0.1"


@dataclass(frozen=True)
class StackSettings:
    """Paths and ports of one local stack; two stacks with different homes and ports coexist."""

    home: Path
    cache_dir: Path
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    redis_port: int = 6379
    flink_rest_port: int = 8081
    flink_rpc_port: int = 6123
    triton_http_port: int = 8000
    triton_grpc_port: int = 8001
    triton_metrics_port: int = 8002
    # None: `<home>/models`, where `python -m inference.serving publish` writes by default.
    triton_model_repository: Path | None = None
    # Loaded at start when published (explicit model control; the rest load on demand).
    triton_models: tuple[str, ...] = ("ranker_python",)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> StackSettings:
        """Defaults are `.stack/` and `.cache/` in the current directory (the repo root)."""
        env = os.environ if environ is None else environ
        base = Path.cwd() if cwd is None else cwd
        return cls(
            home=_path(env.get(HOME_ENV), base / ".stack"),
            cache_dir=_path(env.get(CACHE_ENV), base / ".cache"),
            kafka_port=_port(env, KAFKA_PORT_ENV, 9092),
            kafka_controller_port=_port(env, KAFKA_CONTROLLER_PORT_ENV, 9093),
            redis_port=_port(env, REDIS_PORT_ENV, 6379),
            flink_rest_port=_port(env, FLINK_REST_PORT_ENV, 8081),
            flink_rpc_port=_port(env, FLINK_RPC_PORT_ENV, 6123),
            triton_http_port=_port(env, TRITON_HTTP_PORT_ENV, 8000),
            triton_grpc_port=_port(env, TRITON_GRPC_PORT_ENV, 8001),
            triton_metrics_port=_port(env, TRITON_METRICS_PORT_ENV, 8002),
            triton_model_repository=(
                _path(env[TRITON_MODEL_REPOSITORY_ENV], base)
                if env.get(TRITON_MODEL_REPOSITORY_ENV)
                else None
            ),
            triton_models=tuple(
                name.strip()
                for name in env.get(TRITON_MODELS_ENV, "ranker_python").split(",")
                if name.strip()
            ),
        )

    @property
    def kafka_bootstrap(self) -> str:
        return f"{HOST}:{self.kafka_port}"

    @property
    def redis_url(self) -> str:
        return f"redis://{HOST}:{self.redis_port}/0"

    @property
    def flink_rest_url(self) -> str:
        """The JobManager's REST API, which is also its web UI."""
        return f"http://{HOST}:{self.flink_rest_port}"

    @property
    def model_repository(self) -> Path:
        """The Triton model repository the stack serves (published versions live here)."""
        return self.triton_model_repository or self.home / "models"

    @property
    def triton_http_url(self) -> str:
        return f"http://{HOST}:{self.triton_http_port}"

    @property
    def triton_grpc_url(self) -> str:
        """host:port, the form tritonclient.grpc takes."""
        return f"{HOST}:{self.triton_grpc_port}"


def _path(value: str | None, default: Path) -> Path:
    # Absolute, because the path is also the marker that identifies our processes
    # in /proc/<pid>/cmdline; a relative path would match other checkouts.
    return (Path(value) if value else default).expanduser().resolve()


def _port(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise StackError(f"{key}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise StackError(f"{key}={port} is outside 1..65535")
    return port
