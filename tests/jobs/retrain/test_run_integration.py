"""A retraining run on the real stack: the events topic, training, and the MLflow registry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobs.retrain.policy import Decision
from jobs.retrain.run import Retrainer
from jobs.retrain.settings import RetrainSettings
from runtime.kafka import KafkaSettings
from runtime.model_registry import RegistryClient
from tests.conftest import TopicFactory
from tests.inference.worker.world import stream_events
from tests.support.events import produce_timed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
TRAIN_ARGS = "--max-train-rows 0 --max-eval-rows 200 --epochs 1 --dim 8 --threads 1"


def test_sustained_drift_retrains_on_the_recent_events_and_registers_the_candidate(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    mlflow_registry: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_registry)
    topic = topic_factory(partitions=2)
    events = stream_events(60_000)  # ending a minute ago; enough lists for the ranker
    produce_timed(kafka, topic, events)
    end_ms = max(e.ts for e in events) + 1
    first_half = events[len(events) // 2].ts
    settings = RetrainSettings(
        kafka=kafka, events_topic=topic, work_dir=tmp_path / "work",
        champion=tmp_path / "none", train_args=TRAIN_ARGS, canary=False,
        window_minutes=(end_ms - first_half) / 60_000,
    )  # fmt: skip

    lines: list[str] = []
    retrainer = Retrainer(settings, say=lines.append)
    retrainer.champion = champion_model(settings, tmp_path)
    report = retrainer.run(Decision("start", "3 drifted checks", ("c1", "c2", "c3")), end_ms)

    assert report.timeline == lines
    assert any("exported" in line and "events" in line for line in lines), lines
    assert report.registered.startswith("streamrec-ranker/"), lines
    candidate = report.folder / "candidate"
    metrics = json.loads((candidate / "metrics.json").read_text())
    # Registered with the drift reference of the events it learned from.
    assert (candidate / "drift_reference.parquet").stat().st_size > 0
    assert metrics["dataset"] == "events"
    assert metrics["split"]["train_events"] + metrics["split"]["held_out_events"] < len(events)
    against = metrics["against"]
    assert 0 < against["auc"] < 1 and against["model_dir"] == str(retrainer.champion)
    assert report.champion_auc == against["auc"]
    beaten = against["beaten"]
    assert report.ending == ("not_canaried" if beaten else "not_better")
    name, version = report.registered.split("/")
    tags = RegistryClient(mlflow_registry).model_version_tags(name, version)
    assert tags["retrain.trigger"] == "c1,c2,c3"
    assert tags["retrain.verdict"] == ("better" if beaten else "not_better")


def champion_model(settings: RetrainSettings, tmp_path: Path) -> Path:
    """A model trained on half of the topic's records, the way training always runs."""
    import subprocess
    import sys

    from jobs.retrain.export import export_window

    exported = export_window(settings.kafka, settings.events_topic, 0, tmp_path / "all.jsonl")
    lines = exported.path.read_bytes().splitlines(keepends=True)
    older = tmp_path / "older.jsonl"
    older.write_bytes(b"".join(lines[: len(lines) // 2]))
    out = tmp_path / "champion"
    # The champion stands beside the registry, not in it: only the candidate is registered.
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run(
        [sys.executable, "-m", "jobs.ranker", "--dataset", "events", "--file", str(older),
         "--out", str(out), *TRAIN_ARGS.split()],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"champion training failed:\n{done.stderr[-4000:]}"
    return out
