"""The drift job's one frozen settings object, from ``STREAMREC_DRIFT_*`` and flags."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.drift.check import CheckRules
from jobs.drift.errors import SettingsError
from jobs.drift.reference import REFERENCE_FILE
from jobs.drift.window import WindowPolicy
from runtime.kafka import KafkaSettings
from runtime.settings import (
    DEFAULT_MODEL_DIR,
    ENV_PREFIX,
    MODEL_DIR_ENV,
    Settings,
    group,
    model_dir,
    setting,
    variables,
)
from schemas.topics import FEATURE_DRIFT, FEATURE_UPDATES, RECOMMENDATIONS

DRIFT_PREFIX = ENV_PREFIX + "DRIFT_"
DEFAULT_METRICS_PORT = 9109  # the worker serves 9108


@dataclass(frozen=True)
class DriftSettings(Settings):
    """Topics, reference, window, rules, reports and metrics of one drift job."""

    error = SettingsError

    kafka: KafkaSettings = group(KafkaSettings)
    features_topic: str = setting(
        FEATURE_UPDATES, env="STREAMREC_DRIFT_FEATURES_TOPIC", help="feature changelog topic"
    )
    # Empty: no score drift (only the feature changelog is watched).
    recommendations_topic: str = setting(
        RECOMMENDATIONS,
        env="STREAMREC_DRIFT_RECOMMENDATIONS_TOPIC",
        help="scores topic; '' to skip scores",
        empty=True,
    )
    alerts_topic: str = setting(
        FEATURE_DRIFT, env="STREAMREC_DRIFT_ALERTS_TOPIC", help="where DriftAlerts go"
    )
    group_id: str = setting(
        "streamrec-drift", env="STREAMREC_DRIFT_GROUP_ID", help="consumer group"
    )
    # The reference is saved beside the model, so it follows STREAMREC_MODEL_DIR.
    reference: Path = setting(
        DEFAULT_MODEL_DIR / REFERENCE_FILE,
        env="STREAMREC_DRIFT_REFERENCE",
        help="reference parquet",
        shown=f"${MODEL_DIR_ENV}/{REFERENCE_FILE}",
    )
    reports_dir: Path = setting(
        Path("reports/drift"), env="STREAMREC_DRIFT_REPORTS_DIR", help="report folder"
    )
    keep_reports: int = setting(20, env="STREAMREC_DRIFT_KEEP_REPORTS", help="reports kept")
    # Windows close by time; a row count (0 = off) closes them early on a burst.
    window_rows: int = setting(
        0, env="STREAMREC_DRIFT_WINDOW_ROWS", help="rows that close a window (0 = off)"
    )
    # The feature job emits a slide's windows in one burst every slide (5 min): a
    # check per slide judges one emission instead of empty minutes in between.
    window_seconds: float = setting(
        300.0, env="STREAMREC_DRIFT_WINDOW_SECONDS", help="seconds that close one (0 = off)"
    )
    # Rows judged per check at most: a check costs the same (about 3-4 s) at any rate.
    sample_rows: int = setting(
        20_000, env="STREAMREC_DRIFT_SAMPLE_ROWS", help="rows judged per window at most"
    )
    min_rows: int = setting(
        1000, env="STREAMREC_DRIFT_MIN_ROWS", help="fewer rows: insufficient_data"
    )
    min_column_rows: int = setting(
        200, env="STREAMREC_DRIFT_MIN_COLUMN_ROWS", help="fewer values: a column is not judged"
    )
    keep_categories: int = setting(
        30, env="STREAMREC_DRIFT_KEEP_CATEGORIES", help="most frequent categories compared"
    )
    min_drifted_features: int = setting(
        1, env="STREAMREC_DRIFT_MIN_DRIFTED_FEATURES", help="drifted features that alert"
    )
    # Recommendations kept as the score baseline when the reference has no scores.
    score_baseline_rows: int = setting(
        5000, env="STREAMREC_DRIFT_SCORE_BASELINE_ROWS", help="score baseline size"
    )
    metrics_port: int = setting(
        DEFAULT_METRICS_PORT, env="STREAMREC_DRIFT_METRICS_PORT", help="Prometheus (0 = off)"
    )
    # Loopback unless a deployment says otherwise (a container sets 0.0.0.0).
    metrics_host: str = setting(
        "127.0.0.1", env="STREAMREC_DRIFT_METRICS_HOST", help="address /metrics binds"
    )

    def __post_init__(self) -> None:
        if self.window_rows <= 0 and self.window_seconds <= 0:
            raise SettingsError("set a window row count or a window time (both are 0)")
        for name in (
            "keep_reports", "sample_rows", "min_rows", "keep_categories", "score_baseline_rows",
        ):  # fmt: skip
            if getattr(self, name) < 1:
                raise SettingsError(f"{self.variable(name)} must be at least 1")
        if not 0 <= self.metrics_port < 65536:
            raise SettingsError(f"{self.variable('metrics_port')}={self.metrics_port} is no port")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, args: argparse.Namespace | None = None
    ) -> DriftSettings:
        """Environment, flags over it; the reference defaults to the model directory's."""
        return cls.load(environ, args, reference=model_dir(environ) / REFERENCE_FILE)

    @property
    def window(self) -> WindowPolicy:
        return WindowPolicy(self.window_rows, self.window_seconds, self.sample_rows)

    @property
    def rules(self) -> CheckRules:
        return CheckRules(
            self.min_rows, self.min_column_rows, self.keep_categories, self.min_drifted_features
        )


def env_name(field_name: str) -> str:
    """The variable of a field (tools list what the job reads with it)."""
    return variables(DriftSettings).get(field_name, DRIFT_PREFIX + field_name.upper())


def from_env(
    environ: Mapping[str, str] | None = None, args: argparse.Namespace | None = None
) -> DriftSettings:
    return DriftSettings.from_env(environ, args)
