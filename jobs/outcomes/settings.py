"""The outcome job's one frozen settings object, from ``STREAMREC_OUTCOME_*`` and flags."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.kafka import KafkaSettings
from runtime.settings import Settings, SettingsError, group, setting
from schemas.topics import RECOMMENDATIONS, USER_BEHAVIOR


class OutcomeSettingsError(SettingsError):
    pass


@dataclass(frozen=True)
class OutcomeSettings(Settings):
    """Which topics are joined, over how long, and where the figures go."""

    error = OutcomeSettingsError

    kafka: KafkaSettings = group(KafkaSettings)
    recommendations_topic: str = setting(
        RECOMMENDATIONS, env="STREAMREC_OUTCOME_RECOMMENDATIONS_TOPIC", help="answers"
    )
    events_topic: str = setting(
        USER_BEHAVIOR, env="STREAMREC_OUTCOME_EVENTS_TOPIC", help="the users' later events"
    )
    group_id: str = setting(
        "streamrec-outcome", env="STREAMREC_OUTCOME_GROUP_ID", help="consumer group"
    )
    horizon_minutes: float = setting(
        30.0, env="STREAMREC_OUTCOME_HORIZON_MINUTES", help="an act within it is a hit"
    )
    lateness_seconds: float = setting(
        60.0, env="STREAMREC_OUTCOME_LATENESS_SECONDS", help="how late an event may still count"
    )
    max_open_per_user: int = setting(
        50, env="STREAMREC_OUTCOME_MAX_OPEN_PER_USER", help="open recommendations kept per user"
    )
    metrics_port: int = setting(
        9111, env="STREAMREC_OUTCOME_METRICS_PORT", help="Prometheus /metrics (0 = off)"
    )
    metrics_host: str = setting(
        "127.0.0.1", env="STREAMREC_OUTCOME_METRICS_HOST", help="address /metrics binds"
    )

    def __post_init__(self) -> None:
        if self.horizon_minutes <= 0 or self.lateness_seconds < 0 or self.max_open_per_user < 1:
            raise OutcomeSettingsError(
                f"{self.variable('horizon_minutes')} must be positive, "
                f"{self.variable('lateness_seconds')} not negative and "
                f"{self.variable('max_open_per_user')} at least 1"
            )
