"""Where the model repository is and how to reach Triton: environment, then flags."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from inference.serving.errors import ServingError
from runtime.settings import (
    DEFAULT_MODEL_DIR,
    DEFAULT_STACK_HOME,
    MODEL_DIR_ENV,
    STACK_HOME_ENV,
    Settings,
    redis_url_setting,
    setting,
    stack_home,
)
from schemas.views import PROJECT

# The committed layout: config.pbtxt per model and the python backend's model.py.
TEMPLATE_REPOSITORY = Path(__file__).resolve().parents[1] / "model_repository"
MODELS = ("ranker", "ranker_python", "ranker_torch")
# The secured stack starts Triton with its model control (and, on plaintext HTTP, its
# inference) behind this header; gRPC metadata keys must be lower case.
CONTROL_KEY_HEADER = "streamrec-control-key"
# Triton's gRPC endpoint looks for restricted-protocol keys under this prefix.
GRPC_CONTROL_KEY_HEADER = f"triton-grpc-protocol-{CONTROL_KEY_HEADER}"
CONTROL_KEY_ENV = "STREAMREC_TRITON_CONTROL_KEY"
# The CA that signed Triton's certificate: the worker's gRPC client (and an https://
# endpoint of the CLI) trusts it; unset means plaintext.
TLS_CA_ENV = "STREAMREC_TRITON_TLS_CA"


@dataclass(frozen=True)
class ServingSettings(Settings):
    """The repository Triton serves, its HTTP endpoint, and the model the commands act on."""

    error = ServingError

    repository: Path = setting(
        DEFAULT_STACK_HOME / "models",
        env="STREAMREC_TRITON_MODEL_REPOSITORY",
        help="model repository",
        shown=f"${STACK_HOME_ENV}/models, else {DEFAULT_STACK_HOME / 'models'}",
    )
    http_port: int = setting(8000, env="STREAMREC_TRITON_HTTP_PORT", help="Triton's HTTP port")
    # Empty: Triton on this host at http_port (what the local stack starts).
    http_url: str = setting(
        "",
        env="STREAMREC_TRITON_HTTP_URL",
        flag="--url",
        help="Triton's HTTP endpoint",
        shown="http://127.0.0.1:<http port>",
    )
    # The local binary serves only the python backend, so that is the default here.
    model: str = setting(
        "ranker_python", env="STREAMREC_TRITON_MODEL", help=f"model to act on ({', '.join(MODELS)})"
    )
    artifacts_dir: Path = setting(
        DEFAULT_MODEL_DIR, env=MODEL_DIR_ENV, help="trained ranker that publish copies"
    )
    control_key: str = setting(
        "",
        env=CONTROL_KEY_ENV,
        help=f"sent as the {CONTROL_KEY_HEADER} header (a Triton started with a key needs it)",
        secret=True,
    )
    tls_ca: str = setting(
        "", env=TLS_CA_ENV, help="CA file trusted for an https:// endpoint", shown="system CAs"
    )
    # The canary writes the traffic split where the workers read it (schemas/routing.py):
    # in their Redis, under their Feast project (the workers' own variable).
    redis_url: str = redis_url_setting()
    project: str = setting(
        PROJECT, env="STREAMREC_WORKER_PROJECT", help="the workers' Feast project (routing key)"
    )
    # Before a version is unloaded (canary rollback or promotion, rollout, rollback), every
    # live worker must acknowledge routing without it (inference/serving/drain.py).
    drain_timeout_s: float = setting(
        30.0,
        env="STREAMREC_SERVING_DRAIN_TIMEOUT_S",
        help="longest wait for the workers to stop asking for a version before it is unloaded",
    )
    ack_stale_s: float = setting(
        10.0,
        env="STREAMREC_SERVING_ACK_STALE_S",
        help="a worker whose last routing acknowledgement is older is gone: not waited for",
    )
    # Workers that do not acknowledge at all (an older release): their routing poll plus
    # one batch's budget.
    drain_fallback_s: float = setting(
        3.0,
        env="STREAMREC_SERVING_DRAIN_FALLBACK_S",
        help="the wait before an unload when no worker acknowledges routing",
    )

    def __post_init__(self) -> None:
        if not 0 < self.http_port < 65536:
            raise ServingError(f"{self.variable('http_port')}={self.http_port} is not a port")
        if self.model not in MODELS:
            known = ", ".join(MODELS)
            raise ServingError(f"{self.variable('model')}={self.model!r}; known: {known}")
        for name in ("drain_timeout_s", "ack_stale_s", "drain_fallback_s"):
            if not getattr(self, name) >= 0:
                raise ServingError(f"{self.variable(name)}={getattr(self, name)} is not >= 0")
        if not self.http_url:  # derived once here, so every reader sees the same URL
            object.__setattr__(self, "http_url", f"http://127.0.0.1:{self.http_port}")

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        args: argparse.Namespace | None = None,
    ) -> ServingSettings:
        """Settings with paths made absolute against ``cwd`` (default: the current folder)."""
        base = Path.cwd() if cwd is None else cwd
        loaded = cls.load(environ, args, repository=stack_home(environ) / "models")
        return replace(
            loaded,
            repository=(base / loaded.repository).resolve(),
            artifacts_dir=(base / loaded.artifacts_dir).resolve(),
        )
