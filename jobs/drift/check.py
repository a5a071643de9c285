"""One drift check: a window's rows against the reference, to a DriftAlert.

A window with fewer than ``min_rows`` rows, or with no column holding enough
rows to judge, gets ``insufficient_data`` and no Evidently run: too few rows
say nothing, and a guess would be noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from evidently.core.report import Snapshot

from jobs.drift.columns import DriftRow
from jobs.drift.compare import prepare, run_report, verdicts
from jobs.drift.reference import drift_frame
from schemas.records import DriftAlert, FeatureDrift


@dataclass(frozen=True)
class CheckRules:
    min_rows: int = 1000
    min_column_rows: int = 200
    keep_categories: int = 30
    # How many drifted features make the check's status ``drift``.
    min_drifted_features: int = 1


@dataclass(frozen=True)
class CheckWindow:
    """What the window gathered: the kept rows, how many it saw, its event-time span."""

    check_id: str
    rows: Sequence[DriftRow]
    rows_seen: int
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class CheckResult:
    alert: DriftAlert
    snapshot: Snapshot | None  # None when the window was not judged


def run_check(
    reference: pd.DataFrame, window: CheckWindow, rules: CheckRules, now_ms: int
) -> CheckResult:
    """Judge ``window`` against ``reference`` with Evidently; one alert either way."""
    if window.rows_seen < rules.min_rows:
        return CheckResult(_alert(reference, window, now_ms, "insufficient_data", []), None)
    prepared = prepare(
        reference, drift_frame(window.rows), rules.min_column_rows, rules.keep_categories
    )
    if not prepared.columns:
        return CheckResult(_alert(reference, window, now_ms, "insufficient_data", []), None)
    snapshot = run_report(prepared, rules.min_drifted_features)
    features = verdicts(snapshot.dict(), prepared.columns)
    drifted = sum(feature.drifted for feature in features)
    status = "drift" if drifted >= rules.min_drifted_features else "ok"
    return CheckResult(_alert(reference, window, now_ms, status, features), snapshot)


def _alert(
    reference: pd.DataFrame,
    window: CheckWindow,
    now_ms: int,
    status: str,
    features: list[FeatureDrift],
) -> DriftAlert:
    drifted = sum(feature.drifted for feature in features)
    return DriftAlert(
        check_id=window.check_id,
        checked_at=now_ms,
        window_start=window.start_ms,
        window_end=window.end_ms,
        rows=window.rows_seen,
        reference_rows=len(reference),
        status=status,  # type: ignore[arg-type]
        drifted_share=drifted / len(features) if features else 0.0,
        features=features,
    )
