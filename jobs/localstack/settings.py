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
