"""`make demo` end to end: the whole loop against the test session's Kafka, Redis and Triton."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.demo.cli import main
from tests.conftest import REPO_ROOT, Endpoints, TritonServer
from tests.inference.worker.world import build_world, stream_events

pytestmark = pytest.mark.integration

EVENTS = 20_000


def test_demo_runs_the_whole_loop_on_the_stream(
    stack: Endpoints,
    triton: TritonServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    # An untrained ranker over the stream's items stands in for `make train` (minutes);
    # the drift reference is built the way the training run builds it, on fewer rows.
    model_dir = tmp_path / "model"
    build_world(model_dir, stream_events(EVENTS))
    subprocess.run([sys.executable, "-m", "jobs.drift", "reference", "--max-rows", "20000",
                    "--out", str(model_dir / "drift_reference.parquet")],
                   cwd=REPO_ROOT, check=True, capture_output=True)  # fmt: skip
    triton.publish(model_dir)
    monkeypatch.setenv("STREAMREC_KAFKA_BOOTSTRAP_SERVERS", stack.kafka_bootstrap)
    monkeypatch.setenv("STREAMREC_REDIS_URL", stack.redis_url)
    monkeypatch.setenv("STREAMREC_TRITON_URL", triton.grpc_url)
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path / "stack"))
    code = main(["--limit", str(EVENTS), "--speed", "0", "--model-dir", str(model_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS: the whole loop answered every request once" in out
    assert re.search(r"missing / duplicated / unknown\s+0 / 0 / 0\n", out)
    produced, answered = map(
        int, re.findall(r"requests produced / answered\s+(\d+) / (\d+)", out)[0]
    )
    assert produced == answered > 0
    assert re.search(r"dead-lettered\s+0\n", out)
    assert out.count("→ recommended") == 3
    assert re.search(r"drift check\s+(ok|drift|insufficient_data): ", out)
    # Every service was given, so the demo started no local one of its own.
    started = [d.name for d in (tmp_path / "stack").iterdir() if d.name != "demo"]
    assert started == []
