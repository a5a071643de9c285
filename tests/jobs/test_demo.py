"""`make demo` end to end, against the test session's stack."""

from __future__ import annotations

import pytest

from jobs import demo
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def test_demo_replays_the_stream_and_counts_match(
    stack: Endpoints, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMREC_KAFKA_BOOTSTRAP_SERVERS", stack.kafka_bootstrap)
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out
    assert "110300" in out
