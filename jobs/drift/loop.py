"""The drift job's shell: consume, gather a window, check, publish, report, commit.

At-least-once like every stage: a window's offsets are committed only after
its alert is acknowledged by Kafka, so a crash re-reads the window instead
of skipping a check.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from confluent_kafka import Producer

from jobs.drift.check import CheckResult, CheckWindow, run_check
from jobs.drift.columns import DriftRow, drift_row
from jobs.drift.metrics import DriftMetrics
from jobs.drift.reports import prune_reports, write_report
from jobs.drift.scores import BASELINE_FILE, score_reference, with_scores
from jobs.drift.settings import DriftSettings
from jobs.drift.window import Window
from runtime.consumer import RecordConsumer
from schemas.codec import drift_codec, wall_clock_ms
from schemas.features import UserRecentEvents
from schemas.records import DriftAlert, Recommendation

logger = logging.getLogger("jobs.drift")
STARTUP_GRACE_S = 20.0


class AlertDeliveryError(RuntimeError):
    """The alert was not acknowledged; offsets stay uncommitted."""


@dataclass(frozen=True)
class Source:
    """One consumed topic and the name its records count under."""

    name: str
    consumer: RecordConsumer[Any]


def event_time(record: Any) -> int:
    """The record's own time: window end, latest event, or when it was produced."""
    if isinstance(record, Recommendation):
        return record.produced_at
    if isinstance(record, UserRecentEvents):
        return record.latest_ts
    return int(record.window_end)


class DriftLoop:
    """Runs checks until stopped; ``on_check`` sees every result (the CLI and tests use it)."""

    def __init__(
        self,
        settings: DriftSettings,
        reference: pd.DataFrame,
        sources: Sequence[Source],
        producer: Producer,
        metrics: DriftMetrics,
        stop: threading.Event | None = None,
        on_check: Callable[[CheckResult, Path | None], None] | None = None,
    ) -> None:
        self.settings = settings
        self.reference, self._baseline = score_reference(
            reference,
            settings.reports_dir / BASELINE_FILE,
            settings.score_baseline_rows,
        )
        self.sources = sources
        self.producer = producer
        self.metrics = metrics
        self.stop = stop or threading.Event()
        self.on_check = on_check
        self._codec = drift_codec()
        self._window = self._new_window()
        self._dead_letters_seen = 0

    def _new_window(self) -> Window:
        return Window(self.settings.window, opened_at=time.monotonic())

    def run(self, max_checks: int | None = None, idle_seconds: float | None = None) -> int:
        """Check until stopped, ``max_checks`` done, or nothing arrived for ``idle_seconds``.

        Idleness counts from the last record read or the end of the last check,
        whichever is later. Stopping for idleness checks the partial window first
        (it may say ``insufficient_data``), so a bounded run judges everything it read.
        """
        checks, started = 0, time.monotonic()
        last_record: float | None = None
        while not self.stop.is_set() and (max_checks is None or checks < max_checks):
            if self._poll():
                last_record = time.monotonic()
            idle = idle_seconds is not None and _idle(started, last_record, idle_seconds)
            if self._window.due(time.monotonic()) or (idle and self._window.rows_seen):
                self.check_now()
                checks += 1
                if not idle and last_record is not None:
                    # A check takes seconds (Evidently); records that arrived meanwhile
                    # are still unread, so idleness counts from the end of the check.
                    last_record = time.monotonic()
            if idle:
                break
        return checks

    def _poll(self) -> int:
        received = 0
        for source in self.sources:
            batch = source.consumer.poll_batch(max_records=2000, timeout_s=0.1)
            received += len(batch)
            self.metrics.records.labels(source=source.name).inc(len(batch))
            for _message, record in batch:
                row = drift_row(record)
                if row is None:
                    continue
                if self._baseline is not None and isinstance(record, Recommendation):
                    self._collect_baseline(row)
                else:
                    self._window.add(row, event_time(record))
        dead = sum(sum(s.consumer.dead_letters.counts.values()) for s in self.sources)
        self.metrics.dead_letters.inc(dead - self._dead_letters_seen)
        self._dead_letters_seen = dead
        return received

    def _collect_baseline(self, row: DriftRow) -> None:
        assert self._baseline is not None
        self._baseline.add(row)
        if self._baseline.complete:
            self.reference = with_scores(self.reference, self._baseline.save())
            logger.info(
                "score baseline of %d recommendations saved to %s; scores are judged from now",
                self._baseline.rows,
                self._baseline.path,
            )
            self._baseline = None

    def check_now(self) -> CheckResult:
        """Judge the current window, publish and report it, commit, open the next."""
        started = time.monotonic()
        window, self._window = self._window, self._new_window()
        now = wall_clock_ms()
        result = run_check(self.reference, _check_window(window, now), self.settings.rules, now)
        self._publish(result.alert)
        report = None
        if result.snapshot is not None:
            report = write_report(self.settings.reports_dir, result.alert, result.snapshot)
            prune_reports(self.settings.reports_dir, self.settings.keep_reports)
        for source in self.sources:
            source.consumer.commit()
        self.metrics.record_check(result.alert, time.monotonic() - started)
        _log(result.alert, report)
        if self.on_check is not None:
            self.on_check(result, report)
        return result

    def _publish(self, alert: DriftAlert) -> None:
        failures: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        self.producer.produce(
            self.settings.alerts_topic,
            self._codec.encode(alert),
            key=alert.check_id.encode(),
            on_delivery=delivered,
        )
        if self.producer.flush(30.0) or failures:
            raise AlertDeliveryError(f"drift alert {alert.check_id} not delivered: {failures}")

    def close(self) -> None:
        for source in self.sources:
            source.consumer.close()


def _idle(started: float, last_record: float | None, idle_seconds: float) -> bool:
    """Nothing arrived for ``idle_seconds`` since the last record.

    Before the first record, joining the group and the first fetch take a few
    seconds on their own, so an empty topic counts as idle only after a grace.
    """
    now = time.monotonic()
    if last_record is None:
        return now - started >= max(idle_seconds, STARTUP_GRACE_S)
    return now - last_record >= idle_seconds


def _check_window(window: Window, now_ms: int) -> CheckWindow:
    return CheckWindow(
        check_id=f"drift-{uuid.uuid4().hex[:12]}",
        rows=window.sample,
        rows_seen=window.rows_seen,
        start_ms=window.first_ts if window.first_ts is not None else now_ms,
        end_ms=window.last_ts if window.last_ts is not None else now_ms,
    )


def _log(alert: DriftAlert, report: Path | None) -> None:
    drifted = [f.feature for f in alert.features if f.drifted]
    logger.info(
        "check %s: status=%s rows=%d drifted=%s report=%s",
        alert.check_id,
        alert.status,
        alert.rows,
        ",".join(drifted) or "-",
        report or "-",
    )
