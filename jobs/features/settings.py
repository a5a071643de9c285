"""Settings of the feature job, one frozen object read from flags and the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from schemas.codec import DEFAULT_MAX_FUTURE_SKEW_MS, KIB
from schemas.features import VIEW_TAGS
from schemas.topics import FEATURE_UPDATES, USER_BEHAVIOR, dead_letter_topic

ENV_PREFIX = "STREAMREC_FEATURES_"
MINUTE_MS = 60_000


@dataclass(frozen=True)
class FeatureJobSettings:
    """What the job reads, what it writes, and how it windows.

    ``bounded`` reads up to the offsets that exist when the job starts and then
    finishes, flushing every window: for backfills, tests and benchmarks.
    """

    bootstrap_servers: str = "127.0.0.1:9092"
    kafka_properties: Mapping[str, str] = field(default_factory=dict)
    source_topic: str = USER_BEHAVIOR
    changelog_topic: str = FEATURE_UPDATES
    dead_letter_topic: str = dead_letter_topic(USER_BEHAVIOR)
    group_id: str = "streamrec-features"
    window_ms: int = 30 * MINUTE_MS
    slide_ms: int = 5 * MINUTE_MS
    sequence_length: int = 50
    top_items: int = 10
    out_of_orderness_ms: int = 5_000
    # Long enough that a partition drained late in a catch-up is not taken for idle.
    idle_timeout_ms: int = 30_000
    max_future_skew_ms: int = DEFAULT_MAX_FUTURE_SKEW_MS
    max_event_bytes: int = KIB
    buffer_timeout_ms: int = 10
    checkpoint_dir: Path | None = None
    checkpoint_interval_ms: int = 10_000
    parallelism: int = 1
    bounded: bool = False
    from_earliest: bool = True
    connector_jars: tuple[Path, ...] = ()
    views: tuple[str, ...] = VIEW_TAGS

    def __post_init__(self) -> None:
        if self.window_ms % self.slide_ms:
            raise ValueError(
                f"window {self.window_ms} ms must be a whole number of slides ({self.slide_ms} ms)"
            )
        unknown = set(self.views) - set(VIEW_TAGS)
        if unknown:
            raise ValueError(f"unknown views {sorted(unknown)}; choose from {VIEW_TAGS}")
        for name in ("sequence_length", "top_items", "slide_ms", "parallelism"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``STREAMREC_FEATURES_WINDOW_MS=...`` and friends, as field name -> raw value."""
    env = os.environ if environ is None else environ
    names = FeatureJobSettings.__dataclass_fields__
    return {
        key[len(ENV_PREFIX) :].lower(): value
        for key, value in env.items()
        if key.startswith(ENV_PREFIX) and key[len(ENV_PREFIX) :].lower() in names
    }
