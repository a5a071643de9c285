"""The retraining loop's one frozen settings object, from ``STREAMREC_RETRAIN_*`` and flags."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.retrain.policy import RetrainPolicy
from runtime.kafka import KafkaSettings
from runtime.settings import (
    DEFAULT_MODEL_DIR,
    MODEL_DIR_ENV,
    Settings,
    SettingsError,
    group,
    model_dir,
    setting,
)
from schemas.topics import FEATURE_DRIFT, USER_BEHAVIOR


class RetrainError(SettingsError):
    """A retraining setting that cannot work, or a run that cannot go on."""


@dataclass(frozen=True)
class RetrainSettings(Settings):
    """What starts a run, what it trains on, and how its candidate reaches users."""

    error = RetrainError

    kafka: KafkaSettings = group(KafkaSettings)
    alerts_topic: str = setting(
        FEATURE_DRIFT, env="STREAMREC_RETRAIN_ALERTS_TOPIC", help="the drift job's alerts"
    )
    events_topic: str = setting(
        USER_BEHAVIOR, env="STREAMREC_RETRAIN_EVENTS_TOPIC", help="events retrained on"
    )
    group_id: str = setting(
        "streamrec-retrain", env="STREAMREC_RETRAIN_GROUP_ID", help="consumer group"
    )
    consecutive: int = setting(
        3, env="STREAMREC_RETRAIN_CONSECUTIVE", help="drifted checks in a row that start a run"
    )
    min_interval_s: float = setting(
        3600.0, env="STREAMREC_RETRAIN_MIN_INTERVAL_S", help="seconds between two runs' starts"
    )
    # Recent data: the events of this many minutes before the streak's last check.
    window_minutes: float = setting(
        120.0, env="STREAMREC_RETRAIN_WINDOW_MINUTES", help="minutes of events retrained on"
    )
    champion: Path = setting(
        DEFAULT_MODEL_DIR,
        env="STREAMREC_RETRAIN_CHAMPION",
        help="the served model's directory: the candidate must beat it on the same rows",
        shown=f"${MODEL_DIR_ENV}",
    )
    work_dir: Path = setting(
        Path(".stack/retrain"), env="STREAMREC_RETRAIN_WORK_DIR", help="exports and candidates"
    )
    # Extra flags of `python -m jobs.ranker` (epochs, sizes), split on spaces.
    train_args: str = setting(
        "", env="STREAMREC_RETRAIN_TRAIN_ARGS", help="extra training flags", empty=True
    )
    # The canary a candidate that beats the champion goes to (python -m inference.serving canary).
    canary: bool = setting(
        True, env="STREAMREC_RETRAIN_CANARY", help="canary a candidate that beats the champion"
    )
    canary_args: str = setting(
        "",
        env="STREAMREC_RETRAIN_CANARY_ARGS",
        help="extra flags of the canary (--steps, --hold, --worker-metrics, ...)",
        empty=True,
    )

    def __post_init__(self) -> None:
        if self.consecutive < 1:
            raise RetrainError(f"{self.variable('consecutive')} must be at least 1")
        if self.min_interval_s < 0 or self.window_minutes <= 0:
            raise RetrainError(
                f"{self.variable('min_interval_s')} must not be negative and "
                f"{self.variable('window_minutes')} must be positive"
            )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, args: argparse.Namespace | None = None
    ) -> RetrainSettings:
        """Environment, flags over it; the champion defaults to the model directory."""
        return cls.load(environ, args, champion=model_dir(environ))

    @property
    def policy(self) -> RetrainPolicy:
        return RetrainPolicy(self.consecutive, self.min_interval_s)
