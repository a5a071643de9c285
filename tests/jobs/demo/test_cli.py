"""The demo's fixed metrics ports: what `make observe` scrapes, or a clear error when taken."""

from __future__ import annotations

import socket

import pytest

from jobs.demo.cli import DemoSettings, metrics_port
from schemas.metrics_ports import METRICS_PORTS


def test_the_parts_default_ports_are_the_ones_prometheus_scrapes() -> None:
    settings = DemoSettings.load({})
    assert settings.worker_metrics_port == METRICS_PORTS["worker"] == 9108
    assert settings.drift_metrics_port == METRICS_PORTS["drift"] == 9109
    assert settings.writer_metrics_port == METRICS_PORTS["writer"] == 9112
    moved = DemoSettings.load({"STREAMREC_WORKER_METRICS_PORT": "0",
                               "STREAMREC_FEATURE_WRITER_METRICS_PORT": "19112"})  # fmt: skip
    assert (moved.worker_metrics_port, moved.writer_metrics_port) == (0, 19112)


def test_zero_means_any_free_port_and_a_taken_port_is_a_clear_error() -> None:
    assert metrics_port(0, "worker", "STREAMREC_WORKER_METRICS_PORT") > 0
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with pytest.raises(SystemExit, match=rf"port {taken} for the worker's /metrics is taken"):
            metrics_port(taken, "worker", "STREAMREC_WORKER_METRICS_PORT")
    assert metrics_port(taken, "worker", "STREAMREC_WORKER_METRICS_PORT") == taken
