"""The worker's, the drift job's and the feature writer's /metrics bind loopback unless configured.

Integration-lite: each server is started for real on a free port and the bound
socket's address is read back, then scraped once.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from wsgiref.simple_server import WSGIServer

import pytest

from inference.worker import metrics as worker_metrics
from inference.worker.settings import WorkerSettings, build_parser, parse_args, settings_from
from jobs.drift import cli as drift_cli
from jobs.drift import metrics as drift_metrics
from jobs.drift.settings import DriftSettings
from jobs.feature_writer import cli as writer_cli
from jobs.feature_writer import metrics as writer_metrics
from tests.conftest import free_port

Serve = Callable[[int, str], WSGIServer | None]
SERVERS: dict[str, tuple[Serve, Serve]] = {
    "worker": (
        lambda port, addr: worker_metrics.serve(worker_metrics.WorkerMetrics(), port),
        lambda port, addr: worker_metrics.serve(worker_metrics.WorkerMetrics(), port, addr),
    ),
    "drift": (
        lambda port, addr: drift_metrics.serve(drift_metrics.DriftMetrics(), port),
        lambda port, addr: drift_metrics.serve(drift_metrics.DriftMetrics(), port, addr),
    ),
    "writer": (
        lambda port, addr: writer_metrics.serve(writer_metrics.WriterMetrics(), port),
        lambda port, addr: writer_metrics.serve(writer_metrics.WriterMetrics(), port, addr),
    ),
}


@contextmanager
def running(server: WSGIServer | None) -> Iterator[WSGIServer]:
    assert server is not None
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("role", sorted(SERVERS))
def test_the_default_binds_loopback_only(role: str) -> None:
    port = free_port()
    with running(SERVERS[role][0](port, "")) as server:
        assert server.socket.getsockname()[:2] == ("127.0.0.1", port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            assert f"streamrec_{role}_".encode() in answer.read()


@pytest.mark.parametrize("role", sorted(SERVERS))
def test_a_configured_address_is_bound(role: str) -> None:
    port = free_port()
    with running(SERVERS[role][1](port, "0.0.0.0")) as server:
        assert server.socket.getsockname()[:2] == ("0.0.0.0", port)


@pytest.mark.parametrize("role", sorted(SERVERS))
def test_port_zero_serves_nothing(role: str) -> None:
    assert SERVERS[role][0](0, "") is None


def test_worker_setting_defaults_to_loopback_and_is_listed_in_help() -> None:
    assert WorkerSettings.from_env({}).metrics_host == "127.0.0.1"
    env = {"STREAMREC_WORKER_METRICS_HOST": "0.0.0.0"}
    assert WorkerSettings.from_env(env).metrics_host == "0.0.0.0"
    assert settings_from(parse_args(["--metrics-host", "::1"]), env).metrics_host == "::1"
    assert "STREAMREC_WORKER_METRICS_HOST" in build_parser().format_help()


def test_drift_setting_defaults_to_loopback_and_is_listed_in_help() -> None:
    assert DriftSettings.from_env({}).metrics_host == "127.0.0.1"
    env = {"STREAMREC_DRIFT_METRICS_HOST": "0.0.0.0"}
    assert DriftSettings.from_env(env).metrics_host == "0.0.0.0"
    help_text = drift_cli.build_parser().format_help()
    assert "STREAMREC_DRIFT_METRICS_HOST" in help_text


def test_the_drift_watch_serves_on_its_configured_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served: list[tuple[Any, ...]] = []
    loop = SimpleNamespace(metrics=object(), run=lambda **_: 0, close=lambda: None)
    monkeypatch.setattr(drift_cli, "build_loop", lambda *a, **k: loop)
    monkeypatch.setattr(drift_cli, "serve", lambda *args: served.append(args))
    settings = DriftSettings.from_env({"STREAMREC_DRIFT_METRICS_HOST": "10.1.2.3"})
    drift_cli.run_watch(settings)
    assert served == [(loop.metrics, settings.metrics_port, "10.1.2.3")]


def test_the_worker_serves_on_its_configured_address(monkeypatch: pytest.MonkeyPatch) -> None:
    from inference.worker import __main__ as worker_main
    from inference.worker.artifacts import ModelArtifacts
    from inference.worker.errors import WorkerError

    served: list[tuple[Any, ...]] = []

    def stop_here(*_: Any) -> None:
        raise WorkerError("stop after the metrics server")

    monkeypatch.setenv("STREAMREC_WORKER_METRICS_HOST", "10.1.2.3")
    monkeypatch.setattr(ModelArtifacts, "load", staticmethod(lambda _dir: None))
    monkeypatch.setattr(worker_main, "ensure_topics_once_up", lambda *a: object())
    monkeypatch.setattr(worker_main, "serve", lambda *args: served.append(args))
    monkeypatch.setattr(worker_main, "Worker", stop_here)
    assert worker_main.main([]) == 2
    assert [args[1:] for args in served] == [(9108, "10.1.2.3")]


def test_the_writer_serves_on_its_configured_address(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[tuple[Any, ...]] = []
    loop = SimpleNamespace(metrics=object(), run=lambda **_: None, close=lambda: None)
    monkeypatch.setenv("STREAMREC_FEATURE_WRITER_METRICS_HOST", "10.1.2.3")
    monkeypatch.delenv("STREAMREC_FEATURE_WRITER_METRICS_PORT", raising=False)
    monkeypatch.setattr(writer_cli, "install_stop_handlers", lambda stop: None)
    monkeypatch.setattr(writer_cli, "build_loop", lambda *a, **k: loop)
    monkeypatch.setattr(writer_cli, "serve", lambda *args: served.append(args))
    assert writer_cli.main([]) == 0
    assert served == [(loop.metrics, 9112, "10.1.2.3")]
