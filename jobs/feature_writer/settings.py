"""The writer's one frozen settings object: environment first, command-line flags over it."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jobs.feature_writer.covisit import NEIGHBOURS, TTL_S, CovisitOptions
from jobs.feature_writer.errors import SettingsError
from jobs.feature_writer.rows import ConversionOptions
from runtime.kafka import KafkaSettings
from runtime.online.cluster_calls import DEFAULT_WAIT_TIMEOUT_MS
from runtime.settings import ENV_PREFIX, Settings, group, redis_url_setting, setting
from runtime.settings import mask_url as mask_url  # the one masker, re-exported for callers
from schemas.metrics_ports import LOOPBACK, METRICS_PORTS
from schemas.topics import FEATURE_UPDATES
from schemas.views import KEY_TTL_SECONDS, PROJECT
from schemas.windows import HORIZON_MS, SEQUENCE_LIMIT, WINDOW_MS

WRITER_PREFIX = ENV_PREFIX + "FEATURE_WRITER_"
DEFAULT_GROUP_ID = "streamrec-feature-writer"


@dataclass(frozen=True)
class WriterSettings(Settings):
    """Where to read the changelog, where the online store is, how to batch."""

    error = SettingsError

    kafka: KafkaSettings = group(KafkaSettings)
    topic: str = setting(
        FEATURE_UPDATES, env="STREAMREC_FEATURE_WRITER_TOPIC", help="changelog topic"
    )
    group_id: str = setting(
        DEFAULT_GROUP_ID, env="STREAMREC_FEATURE_WRITER_GROUP_ID", help="consumer group"
    )
    redis_url: str = redis_url_setting()
    # The Feast project of feature_store.yaml; keys are namespaced by it.
    project: str = setting(PROJECT, env="STREAMREC_FEATURE_WRITER_PROJECT", help="Feast project")
    batch_size: int = setting(
        2000, env="STREAMREC_FEATURE_WRITER_BATCH_SIZE", help="records per batch"
    )
    batch_timeout_s: float = setting(
        0.2,
        env="STREAMREC_FEATURE_WRITER_BATCH_TIMEOUT_S",
        flag="--batch-timeout",
        help="seconds to fill a batch",
    )
    # jobs/feature_writer/loop.py: one batch's Redis pipeline in flight while the next
    # is polled and converted; offsets are still committed only after Redis's ack.
    overlap_writes: bool = setting(
        True,
        env="STREAMREC_FEATURE_WRITER_OVERLAP_WRITES",
        help="convert the next batch while Redis writes this one (false: one at a time)",
    )
    horizon_ms: int = setting(
        HORIZON_MS, env="STREAMREC_FEATURE_WRITER_HORIZON_MS", help="recent-clicks horizon"
    )
    sequence_limit: int = setting(
        SEQUENCE_LIMIT,
        env="STREAMREC_FEATURE_WRITER_SEQUENCE_LIMIT",
        flag="--limit",
        help="recent-clicks length",
    )
    # Feast's redis ``key_ttl_seconds``: keep equal to feature_store.yaml.
    key_ttl_seconds: int = setting(
        KEY_TTL_SECONDS,
        env="STREAMREC_FEATURE_WRITER_KEY_TTL_SECONDS",
        help="EXPIRE per entity, renewed on every write (0 = never)",
    )
    # On a Redis Cluster (runtime/online/cluster_calls.py): a batch counts as written, and
    # its offsets are committed, once this many replicas of each master it wrote to hold
    # it, so that a master's failover loses none of it. Ignored on one Redis.
    redis_replica_acks: int = setting(
        1,
        env="STREAMREC_FEATURE_WRITER_REDIS_REPLICA_ACKS",
        help="on a Redis Cluster: replicas per master that must confirm a batch (0 = none)",
    )
    redis_wait_timeout_ms: int = setting(
        DEFAULT_WAIT_TIMEOUT_MS,
        env="STREAMREC_FEATURE_WRITER_REDIS_WAIT_TIMEOUT_MS",
        help="on a Redis Cluster: how long replicas may take to confirm before a retry",
    )
    # Co-visitation counts (jobs/feature_writer/covisit.py): one sorted set per item.
    covisit_neighbours: int = setting(
        NEIGHBOURS,
        env="STREAMREC_FEATURE_WRITER_COVISIT_NEIGHBOURS",
        help="co-visited items kept per item (0 = no co-visitation counts)",
    )
    covisit_ttl_seconds: int = setting(
        TTL_S,
        env="STREAMREC_FEATURE_WRITER_COVISIT_TTL_SECONDS",
        help="EXPIRE of an item's co-visitation set, renewed when counted",
    )
    covisit_window_ms: int = setting(
        WINDOW_MS,
        env="STREAMREC_FEATURE_WRITER_COVISIT_WINDOW_MS",
        help="clicks of one user this close are co-visited",
    )
    # schemas.metrics_ports.METRICS_PORTS["writer"]: what Prometheus scrapes.
    metrics_port: int = setting(
        METRICS_PORTS["writer"],
        env="STREAMREC_FEATURE_WRITER_METRICS_PORT",
        help="Prometheus /metrics (0 = off)",
    )
    # Loopback unless a deployment says otherwise: a container sets 0.0.0.0 so that
    # Prometheus on its network can scrape it; a laptop's writer stays private.
    metrics_host: str = setting(
        LOOPBACK, env="STREAMREC_FEATURE_WRITER_METRICS_HOST", help="address /metrics binds"
    )

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.batch_timeout_s <= 0:
            raise SettingsError("batch size must be >= 1 and batch timeout > 0")
        if self.horizon_ms <= 0 or self.sequence_limit < 1:
            raise SettingsError("horizon must be > 0 ms and the sequence limit >= 1")
        if self.key_ttl_seconds < 0:
            raise SettingsError("key TTL must be >= 1 s, or 0 for no expiry")
        if self.covisit_neighbours < 0:
            raise SettingsError("co-visited items kept must be >= 0 (0 turns counting off)")
        if self.covisit_ttl_seconds < 1 or self.covisit_window_ms < 1:
            raise SettingsError("co-visitation TTL must be >= 1 s and its window >= 1 ms")
        if self.redis_replica_acks < 0 or self.redis_wait_timeout_ms < 1:
            raise SettingsError("replica acks must be >= 0 and the wait timeout >= 1 ms")
        if not 0 <= self.metrics_port < 65536:
            raise SettingsError(f"{self.variable('metrics_port')}={self.metrics_port} is no port")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WriterSettings:
        return cls.load(environ)

    @property
    def conversion(self) -> ConversionOptions:
        return ConversionOptions(horizon_ms=self.horizon_ms, limit=self.sequence_limit)

    @property
    def covisit(self) -> CovisitOptions | None:
        """How to count co-visits; None when counting is off."""
        if not self.covisit_neighbours:
            return None
        return CovisitOptions(
            self.project, self.covisit_window_ms, self.covisit_neighbours, self.covisit_ttl_seconds
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-feature-writer",
        description="Write the feature changelog into the Feast online store on Redis, "
        "in Feast's own format, in batches, at-least-once. Every flag defaults to "
        "its environment variable (shown in brackets).",
    )
    WriterSettings.add_flags(parser)
    parser.add_argument("--max-records", type=int, help="stop after this many records")
    parser.add_argument("--max-seconds", type=float, help="stop after this long")
    parser.add_argument("--log-level", default="INFO")
    return parser


def settings_from(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> WriterSettings:
    """Environment settings with the flags that were given laid over them."""
    return WriterSettings.load(environ, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)
