"""Run the drift watch on the real stack over given changelog rows, collect what it did."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from jobs.drift.check import CheckResult
from jobs.drift.cli import build_loop
from jobs.drift.loop import DriftLoop
from jobs.drift.settings import DriftSettings
from runtime.kafka import KafkaSettings
from schemas.codec import drift_codec
from schemas.features import FeatureUpdate
from schemas.records import DriftAlert
from tests.jobs.drift.streams import produce_changelog


@dataclass
class WatchRun:
    checks: list[tuple[CheckResult, Path | None]]
    published: list[DriftAlert]
    loop: DriftLoop


def watch_settings(
    kafka: KafkaSettings, features_topic: str, reference: Path, reports: Path, **overrides: Any
) -> DriftSettings:
    base = DriftSettings(
        kafka=kafka,
        features_topic=features_topic,
        recommendations_topic="",
        alerts_topic=features_topic + "-drift",
        group_id=f"drift-test-{uuid.uuid4().hex[:8]}",
        reference=reference,
        reports_dir=reports,
        window_rows=50_000,
        window_seconds=0,
        sample_rows=50_000,
        metrics_port=0,
    )
    return replace(base, **overrides)


def run_watch_over(
    settings: DriftSettings, rows: Sequence[FeatureUpdate], idle_seconds: float = 4.0
) -> WatchRun:
    """Produce ``rows``, run the watch until it goes idle, read back the alerts it published."""
    produce_changelog(settings.kafka, settings.features_topic, rows)
    checks: list[tuple[CheckResult, Path | None]] = []
    loop = build_loop(settings, on_check=lambda result, path: checks.append((result, path)))
    try:
        loop.run(idle_seconds=idle_seconds)
    finally:
        loop.close()
    return WatchRun(checks, read_alerts(settings.kafka, settings.alerts_topic, len(checks)), loop)


def read_alerts(kafka: KafkaSettings, topic: str, expected: int) -> list[DriftAlert]:
    consumer = Consumer(
        kafka.client_config(group_id=f"alerts-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest")
    )
    consumer.subscribe([topic])
    codec = drift_codec()
    alerts: list[DriftAlert] = []
    try:
        for _ in range(60):
            for message in consumer.consume(100, timeout=0.5):
                if message.error() is None:
                    alerts.append(codec.decode(message.value() or b""))
            if len(alerts) >= expected:
                break
    finally:
        consumer.close()
    return alerts
