"""Drift scoring: the current window against the reference, through Evidently 0.7.

:func:`prepare` is pure (pandas only): it buckets category ids on the
reference's vocabulary and picks the columns with enough rows on both sides.
:func:`run_report` runs ``Report([DataDriftPreset(...)])`` with one method and
threshold per column; :func:`verdicts` reads the per-column scores back out
of the snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from evidently import DataDefinition, Dataset, Report
from evidently.core.report import Snapshot
from evidently.presets import DataDriftPreset

from jobs.drift.columns import (
    CATEGORICAL,
    COLUMNS,
    DriftColumn,
    bucket_categories,
    top_categories,
)
from schemas.records import FeatureDrift

BY_NAME: dict[str, DriftColumn] = {column.name: column for column in COLUMNS}


@dataclass(frozen=True)
class Prepared:
    """Both tables ready for Evidently, and the columns with enough rows to judge."""

    reference: pd.DataFrame
    current: pd.DataFrame
    columns: tuple[str, ...]
    skipped: tuple[str, ...]


def prepare(
    reference: pd.DataFrame,
    current: pd.DataFrame,
    min_column_rows: int,
    keep_categories: int,
) -> Prepared:
    """Bucket categories and keep the columns both sides can speak for.

    A column with fewer than ``min_column_rows`` values on either side is
    skipped, never judged on a handful of rows.
    """
    judged: list[str] = []
    skipped: list[str] = []
    for column in COLUMNS:
        enough = min(_count(reference, column.name), _count(current, column.name))
        (judged if enough >= min_column_rows else skipped).append(column.name)
    ref, cur = reference[judged].copy(), current[judged].copy()
    for name in CATEGORICAL & set(judged):
        vocabulary = top_categories(reference[name], keep_categories)
        ref[name] = bucket_categories(list(reference[name]), vocabulary)
        cur[name] = bucket_categories(list(current[name]), vocabulary)
    return Prepared(ref, cur, tuple(judged), tuple(skipped))


def _count(frame: pd.DataFrame, name: str) -> int:
    return int(frame[name].notna().sum()) if name in frame else 0


def run_report(prepared: Prepared, min_drifted_features: int = 1) -> Snapshot:
    """Evidently's data-drift preset with each column's own method and threshold.

    Its dataset verdict uses the same rule as the check's status, so the
    report's headline and the published alert agree.
    """
    columns = list(prepared.columns)
    definition = DataDefinition(
        numerical_columns=[c for c in columns if c not in CATEGORICAL],
        categorical_columns=[c for c in columns if c in CATEGORICAL],
    )
    preset = DataDriftPreset(
        columns=columns,
        drift_share=min(min_drifted_features / len(columns), 1.0),
        per_column_method={c: BY_NAME[c].method for c in columns},
        per_column_threshold={c: BY_NAME[c].threshold for c in columns},
    )
    return Report([preset]).run(
        Dataset.from_pandas(prepared.current, data_definition=definition),
        Dataset.from_pandas(prepared.reference, data_definition=definition),
    )


def verdicts(snapshot_dict: dict[str, Any], columns: Sequence[str]) -> list[FeatureDrift]:
    """Per-column score, method, threshold and verdict from ``snapshot.dict()``.

    Each ``ValueDrift`` metric carries its column, method and threshold in its
    config and the distance as its value.
    """
    found: dict[str, FeatureDrift] = {}
    for metric in snapshot_dict["metrics"]:
        config = metric.get("config", {})
        if not str(config.get("type", "")).endswith("ValueDrift"):
            continue
        name, score = config["column"], float(metric["value"])
        threshold = float(config["threshold"])
        found[name] = FeatureDrift(
            feature=name,
            method=str(config["method"]),
            score=score,
            threshold=threshold,
            drifted=score >= threshold,
        )
    missing = sorted(set(columns) - set(found))
    if missing:
        raise ValueError(f"Evidently returned no drift value for {missing}")
    return [found[name] for name in columns]
