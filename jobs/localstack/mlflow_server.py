"""A local MLflow tracking server and model registry, run from its own virtual environment.

MLflow's server pulls in its own pins (Flask, SQLAlchemy, pandas, pyarrow, ...), which
would move the ones apache-flink and apache-beam hold in the project's environment.
So the server lives in a venv of its own under the cache folder, made once with
``python -m venv`` and ``pip install mlflow==MLFLOW_VERSION`` (a marker file says it
is complete, as the Kafka jars' does). The project talks to it over HTTP only
(:mod:`runtime.model_registry`), so nothing of MLflow is imported here.

Runs, params and the registry live in SQLite under ``<home>/mlflow``; artifacts are
stored under ``<home>/mlflow/artifacts`` and reach clients through the server's
``mlflow-artifacts`` proxy, so a client needs the tracking URI and nothing else.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from jobs.localstack.errors import StackError
from jobs.localstack.process import answers_http
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings
from runtime.files import file_lock

log = logging.getLogger(__name__)

# The newest release whose client (mlflow-skinny) has the same version: one REST API
# on both sides. Changing it rebuilds the venv on the next start.
MLFLOW_VERSION = "3.17.2"
VENV_NAME = "mlflow-venv"
_COMPLETE = ".complete"
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
# pip may take minutes on a cold cache (MLflow and its ~80 dependencies).
INSTALL_TIMEOUT_S = 1800.0


def venv_dir(cache_dir: Path) -> Path:
    return cache_dir / VENV_NAME


def install_marker(venv: Path) -> Path:
    return venv / _COMPLETE


def is_installed(venv: Path, version: str = MLFLOW_VERSION) -> bool:
    """True when the venv was completed for ``version`` (the marker names it)."""
    marker = install_marker(venv)
    return marker.exists() and marker.read_text().strip() == f"mlflow {version}"


def ensure_mlflow_venv(cache_dir: Path, version: str = MLFLOW_VERSION) -> Path:
    """The venv holding ``mlflow==version``, created (minutes, once) if missing; its path.

    A venv cannot be moved once made (its scripts name its interpreter), so it is built
    in place; without the marker a previous attempt stopped half way and starts over.
    A lock keeps two stacks (or test sessions) from building it at the same time.
    """
    venv = venv_dir(cache_dir)
    if is_installed(venv, version):
        return venv
    cache_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(cache_dir / f".{VENV_NAME}.lock"):
        if is_installed(venv, version):  # another process finished it while we waited
            return venv
        log.warning(
            "installing MLflow %s into its own environment %s (once; a few minutes)", version, venv
        )
        shutil.rmtree(venv, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(venv)], "creating the MLflow venv")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
        _run([*pip, "install", "-q", f"mlflow=={version}"], f"pip install mlflow=={version}")
        install_marker(venv).write_text(f"mlflow {version}\n")
    return venv


def _run(argv: list[str], what: str) -> None:
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=INSTALL_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as error:
        raise StackError(f"{what} took over {INSTALL_TIMEOUT_S:.0f} s") from error
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        raise StackError(f"{what} failed ({result.returncode}):\n{output}")


def server_command(
    executable: Path, data_dir: Path, port: int, host: str = HOST, workers: int = 1
) -> list[str]:
    """``mlflow server`` on loopback, SQLite metadata and proxied local artifacts."""
    return [
        str(executable),
        "server",
        "--backend-store-uri",
        f"sqlite:///{data_dir / 'mlflow.db'}",
        "--artifacts-destination",
        str(data_dir / "artifacts"),
        "--serve-artifacts",
        "--host",
        host,
        "--port",
        str(port),
        # One worker: a registry for one developer, and the CI machine has 2 cores.
        "--workers",
        str(workers),
    ]


def server_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Ours, minus anything that would point the server at another registry, no telemetry."""
    env = {k: v for k, v in environ.items() if not k.startswith("MLFLOW_")}
    # Nothing outside this machine is contacted (and may not be reachable at all).
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env["DO_NOT_TRACK"] = "true"
    # Its background job runner (GenAI scorers, trace archival) starts eight more
    # processes; the registry needs none of them.
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    return env


class MlflowService(Service):
    name = "mlflow"
    # Uvicorn drains its worker on SIGTERM; the SQLite store needs no flush beyond that.
    stop_timeout_s = 15.0

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.venv = venv_dir(settings.cache_dir)

    @property
    def stdout_path(self) -> Path:
        return self.dir / "mlflow.log"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.settings.mlflow_port}"

    def ports(self) -> tuple[int, ...]:
        return (self.settings.mlflow_port,)

    def endpoint(self) -> str:
        return self.url

    def exports(self) -> dict[str, str]:
        return {TRACKING_URI_ENV: self.url}

    def ensure_installed(self) -> None:
        ensure_mlflow_venv(self.settings.cache_dir)

    def prepare(self) -> None:
        (self.dir / "artifacts").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return server_command(self.venv / "bin" / "mlflow", self.dir, self.settings.mlflow_port)

    def env(self) -> dict[str, str]:
        return server_env(os.environ)

    def is_healthy(self) -> bool:
        return answers_http(f"{self.url}/health")
