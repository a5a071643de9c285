"""`make demo` end to end, against the test session's stack."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.demo.cli import main
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def test_demo_replays_the_stream_and_builds_features(
    stack: Endpoints,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("STREAMREC_KAFKA_BOOTSTRAP_SERVERS", stack.kafka_bootstrap)
    monkeypatch.setenv("STREAMREC_REDIS_URL", stack.redis_url)
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))  # the Feast registry goes here
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out
    assert re.search(r"events consumed back\s+110300\n", out)
    assert re.search(r"feature rows: user_recent\s+110300\n", out)
    assert re.search(r"events refused by the job\s+0\n", out)
    assert out.count("recent items [") == 3
