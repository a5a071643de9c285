"""Settings of the feature job, one frozen object read from flags and the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from jobs.features.maven import KAFKA_CONNECTOR_RELOCATION
from runtime.kafka import DEAD_LETTER_MAX_BYTES
from runtime.kafka_java import connector_properties
from runtime.settings import Settings, SettingsError, mask_properties, setting, variables
from schemas.codec import DEFAULT_MAX_FUTURE_SKEW_MS, KIB
from schemas.features import VIEW_TAGS
from schemas.topics import FEATURE_UPDATES, USER_BEHAVIOR, dead_letter_topic
from schemas.windows import SEQUENCE_LIMIT, SLIDE_MS, TOP_ITEMS, WINDOW_MS

ENV_PREFIX = "STREAMREC_FEATURES_"
# The local run's /metrics: next to the local cluster's JobManager (9249) and
# TaskManager (9250), so all three can run at once.
METRICS_PORT = 9251
LOOPBACK = "127.0.0.1"
# Below this a dead letter keeps too little of the original to be worth having.
MIN_DEAD_LETTER_BYTES = 128 * KIB
WINDOW_MODES = ("changed", "every", "sql")


@dataclass(frozen=True)
class FeatureJobSettings(Settings):
    """What the job reads, what it writes, and how it windows.

    ``bounded`` reads up to the offsets that exist when the job starts and then
    finishes, flushing every window: for backfills, tests and benchmarks.
    """

    # Flat, not a KafkaSettings group: the SQL connector takes exactly these two.
    bootstrap_servers: str = setting(
        "127.0.0.1:9092", env="STREAMREC_KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )
    # The Python roles' librdkafka properties; the connector (the Java client) gets
    # their translation (runtime.kafka_java), then the Java-only ones over it.
    kafka_properties: Mapping[str, str] = setting(
        env="STREAMREC_KAFKA_CONFIG",
        flag="--kafka-config",
        help=r"librdkafka properties, name=value,... (\, is a comma in a value, \\ a "
        "backslash); translated for the Java connector",
        secret=True,
        default_factory=dict,
    )
    kafka_java_properties: Mapping[str, str] = setting(
        env="STREAMREC_KAFKA_JAVA_CONFIG",
        flag="--kafka-java-config",
        help="Java Kafka client properties for the connector only, name=value,... escaped "
        "as STREAMREC_KAFKA_CONFIG (win over those derived from it)",
        secret=True,
        default_factory=dict,
    )
    source_topic: str = setting(
        USER_BEHAVIOR, env="STREAMREC_FEATURES_SOURCE_TOPIC", help="topic with behaviour events"
    )
    changelog_topic: str = setting(
        FEATURE_UPDATES, env="STREAMREC_FEATURES_CHANGELOG_TOPIC", help="topic of the feature rows"
    )
    dead_letter_topic: str = setting(
        dead_letter_topic(USER_BEHAVIOR),
        env="STREAMREC_FEATURES_DEAD_LETTER_TOPIC",
        help="topic for bad and late events",
    )
    group_id: str = setting(
        "streamrec-features",
        env="STREAMREC_FEATURES_GROUP_ID",
        help="consumer group (offsets are committed on checkpoints)",
    )
    window_ms: int = setting(WINDOW_MS, env="STREAMREC_FEATURES_WINDOW_MS", help="window length")
    slide_ms: int = setting(SLIDE_MS, env="STREAMREC_FEATURES_SLIDE_MS", help="window slide")
    sequence_length: int = setting(
        SEQUENCE_LIMIT, env="STREAMREC_FEATURES_SEQUENCE_LENGTH", help="events kept per user"
    )
    top_items: int = setting(
        TOP_ITEMS, env="STREAMREC_FEATURES_TOP_ITEMS", help="trending items kept per category"
    )
    out_of_orderness_ms: int = setting(
        5_000,
        env="STREAMREC_FEATURES_OUT_OF_ORDERNESS_MS",
        help="watermark delay behind the newest event",
    )
    # Long enough that a partition drained late in a catch-up is not taken for idle.
    idle_timeout_ms: int = setting(
        30_000,
        env="STREAMREC_FEATURES_IDLE_TIMEOUT_MS",
        help="a partition quiet this long stops holding back the watermark",
    )
    max_future_skew_ms: int = setting(
        DEFAULT_MAX_FUTURE_SKEW_MS,
        env="STREAMREC_FEATURES_MAX_FUTURE_SKEW_MS",
        help="events further ahead of the clock are refused",
    )
    max_event_bytes: int = setting(
        KIB, env="STREAMREC_FEATURES_MAX_EVENT_BYTES", help="larger events are dead-lettered"
    )
    # The dead-letter topic is created with this max.message.bytes; the CLI lowers
    # it to the limit of a topic that already exists with a smaller one.
    dead_letter_max_bytes: int = setting(
        DEAD_LETTER_MAX_BYTES,
        env="STREAMREC_FEATURES_DEAD_LETTER_MAX_BYTES",
        help="largest dead letter; a bigger one keeps a marked prefix of the original",
    )
    buffer_timeout_ms: int = setting(
        10,
        env="STREAMREC_FEATURES_BUFFER_TIMEOUT_MS",
        help="longest wait of a half-full network buffer (latency)",
    )
    # Only the fresh view keeps per-user state without end: the event-time windows drop
    # theirs as the watermark passes. The keyed fresh view reads an idle user as empty
    # at once and frees its state by a timer within a tenth of this (at most a minute)
    # later (RecentEventsFunction); the SQL one through Flink's state TTL. Longer than the
    # 30-minute horizon (schemas.windows.HORIZON_MS) the writer cuts the fresh view
    # to, so a user active within it keeps every event the row can show.
    state_ttl_ms: int = setting(
        6 * 3_600_000,
        env="STREAMREC_FEATURES_STATE_TTL_MS",
        help="the fresh view forgets a user idle this long, in processing time (0: never)",
    )
    # The local mini-cluster's JVM (python -m jobs.features) otherwise takes a quarter of
    # the machine's memory as its heap and, with state on the heap, grows into all of it
    # (6.8 GB RSS in a 30-minute soak on a 24 GB box). A cluster sizes its TaskManagers.
    jvm_heap_mb: int = setting(
        2048,
        env="STREAMREC_FEATURES_JVM_HEAP_MB",
        help="heap of the local run's JVM, in MB (state lives on it); a cluster sizes its own",
    )
    jvm_gc: str = setting(
        "parallel",
        env="STREAMREC_FEATURES_JVM_GC",
        help="the local run's garbage collector: parallel (the most events per core) or g1 "
        "(shorter pauses on a large heap)",
    )
    checkpoint_dir: Path | None = setting(
        None, env="STREAMREC_FEATURES_CHECKPOINT_DIR", help="enables checkpoints, kept here"
    )
    checkpoint_interval_ms: int = setting(
        10_000, env="STREAMREC_FEATURES_CHECKPOINT_INTERVAL_MS", help="time between checkpoints"
    )
    parallelism: int = setting(1, env="STREAMREC_FEATURES_PARALLELISM", help="operator parallelism")
    bounded: bool = setting(
        False, env="STREAMREC_FEATURES_BOUNDED", help="stop at the offsets seen at start"
    )
    from_earliest: bool = setting(
        True,
        env="STREAMREC_FEATURES_FROM_EARLIEST",
        help="start from the earliest offsets, not the group's",
    )
    # Built (Maven) or given with --jar by the CLI: not a setting of its own.
    connector_jars: tuple[Path, ...] = field(default=())
    # Flink's metrics from the local run's mini-cluster (jobs/features/metrics.py); on a
    # cluster its own reporter serves them, so a submitted job (--detach) turns this off.
    metrics_port: int = setting(
        METRICS_PORT,
        env="STREAMREC_FEATURES_METRICS_PORT",
        help="port of the local run's Prometheus endpoint (Flink's metrics); 0: none, "
        "as for a submitted job (--detach), which its cluster's reporter serves",
    )
    metrics_host: str = setting(
        LOOPBACK, env="STREAMREC_FEATURES_METRICS_HOST", help="address that endpoint binds"
    )
    # The reporter's jars (jobs.features.metrics.reporter_jars), found by the CLI.
    metrics_jars: tuple[Path, ...] = field(default=())
    # Windows close when the watermark passes their end; their slide is minutes, so a
    # second more costs nothing live. In a catch-up each advance then closes several
    # slides at once, and the changed mode writes one of a key's windows, not each.
    watermark_interval_ms: int = setting(
        1_000,
        env="STREAMREC_FEATURES_WATERMARK_INTERVAL_MS",
        help="how often the source's watermark advances (Flink's auto-watermark-interval)",
    )
    # How the event-time windows are computed and which of them are written
    # (jobs/features/keyed.py; io.streamrec.flink.SlicedWindowFunction).
    window_mode: str = setting(
        "changed",
        env="STREAMREC_FEATURES_WINDOW_MODE",
        help="changed: keyed sliced windows, a key's window is written only where events "
        "enter or leave it, and of those one watermark advance passes only the newest; "
        "every: the same operator, every window; sql: Flink SQL HOP windows, every window",
    )
    views: tuple[str, ...] = setting(
        VIEW_TAGS, env="STREAMREC_FEATURES_VIEWS", help="comma-separated subset of the views"
    )

    def __post_init__(self) -> None:
        if self.state_ttl_ms < 0:
            raise SettingsError(f"{self.variable('state_ttl_ms')} must be 0 (off) or more")
        if not 0 <= self.metrics_port < 65536:
            raise SettingsError(f"{self.variable('metrics_port')} must be 0 (off) to 65535")
        if self.jvm_heap_mb < 256:
            raise SettingsError(f"{self.variable('jvm_heap_mb')} must be at least 256")
        for name in (
            "sequence_length",
            "top_items",
            "slide_ms",
            "parallelism",
            "watermark_interval_ms",
        ):
            if getattr(self, name) < 1:
                raise SettingsError(f"{self.variable(name)} must be at least 1")
        if self.window_ms % self.slide_ms:
            raise SettingsError(
                f"window {self.window_ms} ms must be a whole number of slides ({self.slide_ms} ms)"
            )
        if self.dead_letter_max_bytes < MIN_DEAD_LETTER_BYTES:
            raise SettingsError(
                f"{self.variable('dead_letter_max_bytes')} must be at least "
                f"{MIN_DEAD_LETTER_BYTES} (room for the error, key and some of the original)"
            )
        # Untranslatable Kafka security settings fail here, before any topic is touched.
        self.connector_properties()
        if self.jvm_gc not in ("parallel", "g1"):
            raise SettingsError(f"{self.variable('jvm_gc')} must be parallel or g1")
        if self.window_mode not in WINDOW_MODES:
            raise SettingsError(
                f"{self.variable('window_mode')} must be one of {', '.join(WINDOW_MODES)}, "
                f"not {self.window_mode!r}"
            )
        unknown = set(self.views) - set(VIEW_TAGS)
        if unknown:
            raise SettingsError(f"unknown views {sorted(unknown)}; choose from {VIEW_TAGS}")

    def masked(self) -> FeatureJobSettings:
        """These settings with every secret property masked, for text meant to be read.

        The SQL carries the connector's properties; built from these, a derived
        secret (the JAAS config) is made of masked parts too.
        """
        return replace(
            self,
            kafka_properties=mask_properties(self.kafka_properties),
            kafka_java_properties=mask_properties(self.kafka_java_properties),
        )

    def connector_properties(self) -> dict[str, str]:
        """The Kafka connector's client properties (Java names, secrets included)."""
        return connector_properties(
            self.kafka_properties, self.kafka_java_properties, KAFKA_CONNECTOR_RELOCATION
        )


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The job's own ``STREAMREC_FEATURES_*`` variables that are set: field name -> raw value.

    Only a listing (for logs and tests); :meth:`FeatureJobSettings.load` reads them.
    """
    env = os.environ if environ is None else environ
    return {
        name: env[variable]
        for name, variable in variables(FeatureJobSettings).items()
        if variable.startswith(ENV_PREFIX) and variable in env
    }
