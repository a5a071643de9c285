"""The drift job's one frozen settings object, from ``STREAMREC_DRIFT_*`` and flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from jobs.drift.check import CheckRules
from jobs.drift.errors import SettingsError
from jobs.drift.reference import REFERENCE_FILE
from jobs.drift.window import WindowPolicy
from schemas.kafka import ENV_PREFIX, KafkaSettings
from schemas.topics import FEATURE_DRIFT, FEATURE_UPDATES, RECOMMENDATIONS

DRIFT_PREFIX = ENV_PREFIX + "DRIFT_"
MODEL_DIR_ENV = ENV_PREFIX + "MODEL_DIR"
DEFAULT_MODEL_DIR = Path(".cache/ranker")
DEFAULT_METRICS_PORT = 9109  # the worker serves 9108


@dataclass(frozen=True)
class DriftSettings:
    """Topics, reference, window, rules, reports and metrics of one drift job."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    features_topic: str = FEATURE_UPDATES
    # Empty: no score drift (only the feature changelog is watched).
    recommendations_topic: str = RECOMMENDATIONS
    alerts_topic: str = FEATURE_DRIFT
    group_id: str = "streamrec-drift"
    reference: Path = DEFAULT_MODEL_DIR / REFERENCE_FILE
    reports_dir: Path = Path("reports/drift")
    keep_reports: int = 20
    # Windows close by time; a row count (0 = off) closes them early on a burst.
    window_rows: int = 0
    # The feature job emits a slide's windows in one burst every slide (5 min): a
    # check per slide judges one emission instead of empty minutes in between.
    window_seconds: float = 300.0
    # Rows judged per check at most: a check costs the same (about 3-4 s) at any rate.
    sample_rows: int = 20_000
    min_rows: int = 1000
    min_column_rows: int = 200
    keep_categories: int = 30
    min_drifted_features: int = 1
    # Recommendations kept as the score baseline when the reference has no scores.
    score_baseline_rows: int = 5000
    metrics_port: int = DEFAULT_METRICS_PORT

    def __post_init__(self) -> None:
        if self.window_rows <= 0 and self.window_seconds <= 0:
            raise SettingsError("set a window row count or a window time (both are 0)")
        for name in (
            "keep_reports", "sample_rows", "min_rows", "keep_categories", "score_baseline_rows",
        ):  # fmt: skip
            if getattr(self, name) < 1:
                raise SettingsError(f"{DRIFT_PREFIX}{name.upper()} must be at least 1")
        if not 0 <= self.metrics_port < 65536:
            raise SettingsError(f"{DRIFT_PREFIX}METRICS_PORT={self.metrics_port} is not a port")

    @property
    def window(self) -> WindowPolicy:
        return WindowPolicy(self.window_rows, self.window_seconds, self.sample_rows)

    @property
    def rules(self) -> CheckRules:
        return CheckRules(
            self.min_rows, self.min_column_rows, self.keep_categories, self.min_drifted_features
        )

    def describe(self) -> str:
        return (
            f"kafka: {self.kafka.describe()} | topics {self.features_topic}, "
            f"{self.recommendations_topic or '(no scores)'} -> {self.alerts_topic} "
            f"group={self.group_id} | reference={self.reference} reports={self.reports_dir} "
            f"keep={self.keep_reports} | window rows={self.window_rows} "
            f"seconds={self.window_seconds} sample={self.sample_rows} min={self.min_rows} | "
            f"metrics port={self.metrics_port}"
        )


# Field name -> how to read it from its STREAMREC_DRIFT_<NAME> variable.
_PARSERS = {"int": int, "float": float, "str": str, "Path": Path}


def env_name(field_name: str) -> str:
    return DRIFT_PREFIX + field_name.upper()


def from_env(environ: Mapping[str, str] | None = None) -> DriftSettings:
    """Every field from ``STREAMREC_DRIFT_<FIELD>``; the reference defaults to the model's."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {"kafka": KafkaSettings.from_env(env)}
    model_dir = Path(env.get(MODEL_DIR_ENV, "") or DEFAULT_MODEL_DIR)
    values["reference"] = model_dir / REFERENCE_FILE
    for spec in fields(DriftSettings):
        raw = env.get(env_name(spec.name))
        if spec.name == "kafka" or raw is None:
            continue
        parse = _PARSERS[str(spec.type)]
        try:
            values[spec.name] = parse(raw.strip())
        except ValueError:
            raise SettingsError(f"{env_name(spec.name)}={raw!r} is not a {spec.type}") from None
    return DriftSettings(**values)  # type: ignore[arg-type]
