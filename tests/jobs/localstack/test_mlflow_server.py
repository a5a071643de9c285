"""The MLflow service without starting it: its venv marker, command line, environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.localstack import StackSettings
from jobs.localstack import mlflow_server as mlflow
from jobs.localstack.mlflow_server import (
    MLFLOW_VERSION,
    MlflowService,
    ensure_mlflow_venv,
    install_marker,
    is_installed,
    server_command,
    server_env,
    venv_dir,
)
from jobs.localstack.stack import REGISTRY


def test_the_port_defaults_to_5000_and_is_a_setting(tmp_path: Path) -> None:
    assert StackSettings.from_env({}, cwd=tmp_path).mlflow_port == 5000
    settings = StackSettings.from_env({"STREAMREC_MLFLOW_PORT": "15000"}, cwd=tmp_path)
    service = MlflowService(settings)
    assert service.ports() == (15000,)
    assert service.exports() == {"MLFLOW_TRACKING_URI": "http://127.0.0.1:15000"}
    assert service.endpoint() == "http://127.0.0.1:15000"
    assert service.dir == settings.home / "mlflow"
    assert "mlflow" in dict(REGISTRY)


def test_the_server_listens_on_loopback_with_its_store_in_the_home(tmp_path: Path) -> None:
    argv = server_command(Path("/venv/bin/mlflow"), tmp_path / "mlflow", 15000)
    assert argv[:2] == ["/venv/bin/mlflow", "server"]

    def option(name: str) -> str:
        return argv[argv.index(name) + 1]

    assert option("--backend-store-uri") == f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    assert option("--artifacts-destination") == str(tmp_path / "mlflow" / "artifacts")
    assert (option("--host"), option("--port"), option("--workers")) == (
        "127.0.0.1",
        "15000",
        "1",
    )
    assert "--serve-artifacts" in argv
    # The pid guard recognises the process by its folder in the command line.
    service = MlflowService(StackSettings(home=tmp_path, cache_dir=tmp_path / "cache"))
    assert service.marker in " ".join(service.command())


def test_the_server_ignores_our_mlflow_variables_and_phones_nowhere() -> None:
    env = server_env({"PATH": "/bin", "MLFLOW_TRACKING_URI": "http://elsewhere"})
    assert env["PATH"] == "/bin" and "MLFLOW_TRACKING_URI" not in env
    assert env["MLFLOW_DISABLE_TELEMETRY"] == "true"
    assert env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"


def test_the_marker_names_the_version(tmp_path: Path) -> None:
    venv = venv_dir(tmp_path)
    assert venv == tmp_path / "mlflow-venv"
    assert not is_installed(venv)
    venv.mkdir()
    install_marker(venv).write_text("mlflow 0.0.1\n")
    assert not is_installed(venv)  # another version: rebuilt
    install_marker(venv).write_text(f"mlflow {MLFLOW_VERSION}\n")
    assert is_installed(venv)


def test_a_complete_venv_is_not_installed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], what: str) -> None:
        calls.append(argv)
        venv_dir(tmp_path).mkdir(exist_ok=True)  # what `python -m venv` makes

    monkeypatch.setattr(mlflow, "_run", run)
    venv = ensure_mlflow_venv(tmp_path)  # nothing there: venv + pip, then the marker
    assert [argv[1:3] for argv in calls] == [["-m", "venv"], ["-m", "pip"]]
    assert f"mlflow=={MLFLOW_VERSION}" in calls[1]
    assert is_installed(venv)
    calls.clear()
    assert ensure_mlflow_venv(tmp_path) == venv
    assert calls == []


def test_a_half_made_venv_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leftover = venv_dir(tmp_path) / "lib" / "half-installed"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("x")
    monkeypatch.setattr(mlflow, "_run", lambda argv, what: venv_dir(tmp_path).mkdir(exist_ok=True))
    ensure_mlflow_venv(tmp_path)
    assert not leftover.exists()
    assert is_installed(venv_dir(tmp_path))
