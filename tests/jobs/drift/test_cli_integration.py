"""``python -m jobs.drift watch`` as make demo runs it: a bounded run ending with its verdict."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from jobs.drift.reference import save_reference
from runtime.kafka import KafkaSettings
from schemas.features import FeatureUpdate
from tests.conftest import REPO_ROOT, TopicFactory
from tests.jobs.drift.streams import produce_changelog

pytestmark = pytest.mark.integration


def test_bounded_watch_prints_the_verdict_and_the_report_path(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    stream_reference: pd.DataFrame,
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    model_dir = tmp_path / "model"
    save_reference(stream_reference, model_dir / "drift_reference.parquet")
    topic = topic_factory(2)
    produce_changelog(kafka, topic, stream_changelog[500_000:520_000])
    env = {
        **os.environ,
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMREC_MODEL_DIR": str(model_dir),
        "STREAMREC_DRIFT_REPORTS_DIR": str(tmp_path / "reports"),
        "STREAMREC_DRIFT_METRICS_PORT": "0",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jobs.drift",
            "watch",
            "--features-topic",
            topic,
            "--recommendations-topic",
            "",
            "--alerts-topic",
            topic + "-drift",
            "--group-id",
            f"cli-{uuid.uuid4().hex[:8]}",
            "--idle-seconds",
            "4",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    verdict = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"DRIFT status=ok checks=1 drifted=- report=(\S+\.html)", verdict)
    assert match, done.stdout + done.stderr[-2000:]
    assert Path(match.group(1)).exists()
