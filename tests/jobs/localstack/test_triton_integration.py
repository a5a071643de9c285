"""The stack's Triton service for real: up, ready, metrics, down with nothing left behind."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from jobs.localstack import Stack, StackSettings, process
from jobs.localstack.cli import main as stack_cli
from tests.support.stacks import distinct_free_ports

pytestmark = pytest.mark.integration


def test_triton_starts_reports_ready_and_stops_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = dict(zip(("HTTP", "GRPC", "METRICS"), distinct_free_ports(3), strict=True))
    for kind, port in ports.items():
        monkeypatch.setenv(f"STREAMREC_TRITON_{kind}_PORT", str(port))
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STREAMREC_CACHE_DIR", str(StackSettings.from_env().cache_dir))
    assert stack_cli(["up", "--services", "triton"]) == 0
    settings = StackSettings.from_env()
    stack = Stack(settings)
    try:
        (status,) = stack.status(["triton"])
        assert status.healthy and status.pid is not None
        assert stack_cli(["status", "--services", "triton"]) == 0
        assert "STREAMREC_TRITON_URL=127.0.0.1:" in capsys.readouterr().out
        url = f"http://127.0.0.1:{ports['METRICS']}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert b"nv_" in response.read()
    finally:
        assert stack_cli(["down", "--services", "triton"]) == 0
    assert not process.is_ours(status.pid, stack.services["triton"].marker)
    assert process.group_members(status.pid) == []  # no python backend stub left behind
    assert stack_cli(["status", "--services", "triton"]) == 1
