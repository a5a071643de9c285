"""The demo's last step: one drift check of the run's feature changelog against the reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from jobs.demo.loop import RunTopics
from jobs.drift.reference import REFERENCE_FILE
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from schemas.codec import drift_codec
from schemas.records import DriftAlert

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REPORTS_DIR = PROJECT_ROOT / "reports" / "drift"
WINDOW_ROWS = 50_000


def run_drift_check(
    kafka: KafkaSettings,
    topics: RunTopics,
    model_dir: Path,
    run_id: str,
    role_env: Mapping[str, str] | None = None,
    metrics_port: int = 0,
) -> tuple[DriftAlert | None, Path | None]:
    """One check over the first window of the run's changelog; the alert and its HTML report.

    ``kafka`` reads the alert back; the check itself runs with ``role_env`` (its own
    principal on a secured stack) and serves its metrics on ``metrics_port`` (0 = none).
    """
    alerts = f"{run_id}.feature-drift"
    argv = [
        sys.executable,
        "-m",
        "jobs.drift",
        "watch",
        "--features-topic",
        topics.changelog,
        "--recommendations-topic",
        topics.recommendations,
        "--alerts-topic",
        alerts,
        "--group-id",
        f"{run_id}.drift",
        "--reference",
        str(model_dir / REFERENCE_FILE),
        "--reports-dir",
        str(REPORTS_DIR),
        "--window-rows",
        str(WINDOW_ROWS),
        "--window-seconds",
        "0",
        "--max-checks",
        "1",
        "--idle-seconds",
        "15",
        "--metrics-port",
        str(metrics_port),
    ]
    env = {
        **os.environ,
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        **(role_env or {}),
    }
    done = subprocess.run(argv, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"drift check failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None, None
    codec = drift_codec()
    found = [
        codec.decode(m.value())
        for m in read_range(kafka, alerts, {}, high_watermarks(kafka, alerts))
    ]
    # The watch's last line is its verdict: `DRIFT status=… report=<path>|-`.
    report = re.search(r"^DRIFT .* report=(\S+)$", done.stdout, re.MULTILINE)
    path = Path(report.group(1)) if report and report.group(1) != "-" else None
    return (found[-1] if found else None), path


def drift_lines(result: tuple[DriftAlert | None, Path | None]) -> list[str]:
    alert, report = result
    if alert is None:
        return [f"{'drift check':<32}did not run (see above)"]
    flagged = [f.feature for f in alert.features if f.drifted]
    verdict = f"{alert.status}: {len(flagged)} of {len(alert.features)} features drifted"
    if flagged:
        verdict += f" ({', '.join(flagged)})"
    return [
        f"{'drift check':<32}{verdict}, {alert.rows} rows vs {alert.reference_rows} reference",
        f"{'drift report':<32}{report or 'none written'}",
    ]
