"""The writer's one frozen settings object: environment first, command-line flags over it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from jobs.feature_writer.errors import SettingsError
from jobs.feature_writer.rows import DEFAULT_HORIZON_MS, DEFAULT_SEQUENCE_LIMIT, ConversionOptions
from jobs.feature_writer.views import PROJECT
from schemas.kafka import ENV_PREFIX, KafkaSettings
from schemas.topics import FEATURE_UPDATES

REDIS_URL_ENV = ENV_PREFIX + "REDIS_URL"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
WRITER_PREFIX = ENV_PREFIX + "FEATURE_WRITER_"
DEFAULT_GROUP_ID = "streamrec-feature-writer"


@dataclass(frozen=True)
class WriterSettings:
    """Where to read the changelog, where the online store is, how to batch."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    topic: str = FEATURE_UPDATES
    group_id: str = DEFAULT_GROUP_ID
    redis_url: str = DEFAULT_REDIS_URL
    project: str = PROJECT
    batch_size: int = 2000
    batch_timeout_s: float = 0.2
    horizon_ms: int = DEFAULT_HORIZON_MS
    sequence_limit: int = DEFAULT_SEQUENCE_LIMIT
    # Feast's redis ``key_ttl_seconds``: keep equal to feature_store.yaml (unset = no expiry).
    key_ttl_seconds: int | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WriterSettings:
        env = os.environ if environ is None else environ
        ttl = env.get(WRITER_PREFIX + "KEY_TTL_SECONDS", "").strip()
        return cls(
            kafka=KafkaSettings.from_env(env),
            topic=env.get(WRITER_PREFIX + "TOPIC", FEATURE_UPDATES),
            group_id=env.get(WRITER_PREFIX + "GROUP_ID", DEFAULT_GROUP_ID),
            redis_url=env.get(REDIS_URL_ENV, DEFAULT_REDIS_URL),
            # The Feast project of feature_store.yaml; keys are namespaced by it.
            project=env.get(WRITER_PREFIX + "PROJECT", PROJECT),
            batch_size=_int(env, "BATCH_SIZE", cls.batch_size),
            batch_timeout_s=_float(env, "BATCH_TIMEOUT_S", cls.batch_timeout_s),
            horizon_ms=_int(env, "HORIZON_MS", cls.horizon_ms),
            sequence_limit=_int(env, "SEQUENCE_LIMIT", cls.sequence_limit),
            key_ttl_seconds=int(ttl) if ttl else None,
        ).validated()

    def validated(self) -> WriterSettings:
        if self.batch_size < 1 or self.batch_timeout_s <= 0:
            raise SettingsError("batch size must be >= 1 and batch timeout > 0")
        if self.horizon_ms <= 0 or self.sequence_limit < 1:
            raise SettingsError("horizon must be > 0 ms and the sequence limit >= 1")
        if self.key_ttl_seconds is not None and self.key_ttl_seconds < 1:
            raise SettingsError("key TTL must be >= 1 s (leave it unset for no expiry)")
        return self

    @property
    def conversion(self) -> ConversionOptions:
        return ConversionOptions(horizon_ms=self.horizon_ms, limit=self.sequence_limit)

    def describe(self) -> str:
        """One loggable line, secrets masked."""
        return (
            f"kafka: {self.kafka.describe()} topic={self.topic} group={self.group_id} | "
            f"redis={mask_url(self.redis_url)} project={self.project} "
            f"ttl={self.key_ttl_seconds} | batch={self.batch_size}/{self.batch_timeout_s}s "
            f"horizon={self.horizon_ms}ms limit={self.sequence_limit}"
        )


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(WRITER_PREFIX + name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise SettingsError(f"{WRITER_PREFIX}{name}={raw!r} is not an integer") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(WRITER_PREFIX + name, "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise SettingsError(f"{WRITER_PREFIX}{name}={raw!r} is not a number") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.feature_writer",
        description="Write the feature changelog into the Feast online store on Redis, "
        "in Feast's own format, in batches, at-least-once. Every flag defaults to "
        f"its environment variable ({WRITER_PREFIX}*, {REDIS_URL_ENV}, "
        f"{ENV_PREFIX}KAFKA_BOOTSTRAP_SERVERS).",
    )
    parser.add_argument("--bootstrap-servers", help="Kafka bootstrap servers")
    parser.add_argument("--topic", help=f"changelog topic (default {FEATURE_UPDATES})")
    parser.add_argument("--group-id", help=f"consumer group (default {DEFAULT_GROUP_ID})")
    parser.add_argument("--redis-url", help=f"online store Redis (default {DEFAULT_REDIS_URL})")
    parser.add_argument("--batch-size", type=int, help="records per batch (default 2000)")
    parser.add_argument("--batch-timeout", type=float, help="seconds to fill a batch (0.2)")
    parser.add_argument("--horizon-ms", type=int, help="recent-clicks horizon (30 min)")
    parser.add_argument("--limit", type=int, help="recent-clicks length (50)")
    parser.add_argument("--key-ttl-seconds", type=int, help="EXPIRE per entity (none)")
    parser.add_argument("--max-records", type=int, help="stop after this many records")
    parser.add_argument("--max-seconds", type=float, help="stop after this long")
    parser.add_argument("--log-level", default="INFO")
    return parser


def settings_from(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> WriterSettings:
    """Environment settings with the flags that were given laid over them."""
    base = WriterSettings.from_env(environ)
    kafka = base.kafka
    if args.bootstrap_servers:
        kafka = replace(kafka, bootstrap_servers=args.bootstrap_servers)
    flags = {
        "topic": args.topic,
        "group_id": args.group_id,
        "redis_url": args.redis_url,
        "batch_size": args.batch_size,
        "batch_timeout_s": args.batch_timeout,
        "horizon_ms": args.horizon_ms,
        "sequence_limit": args.limit,
        "key_ttl_seconds": args.key_ttl_seconds,
    }
    given = {name: value for name, value in flags.items() if value is not None}
    return replace(base, kafka=kafka, **given).validated()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)
