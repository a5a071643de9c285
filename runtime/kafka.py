"""Kafka connection settings and topic set-up shared by every process.

Every process reads the same variables, so pointing the whole pipeline at an
existing cluster is one export: ``STREAMREC_KAFKA_BOOTSTRAP_SERVERS`` plus, for
secured clusters, librdkafka properties in ``STREAMREC_KAFKA_CONFIG``
(``security.protocol=SASL_SSL,sasl.mechanism=PLAIN,...``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from runtime.settings import ENV_PREFIX as ENV_PREFIX  # re-exported: roles import it from here
from runtime.settings import Settings, setting
from runtime.settings import parse_properties as parse_properties

_log = logging.getLogger(__name__)

DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
# Dead letters carry the original bytes base64-encoded: a third bigger than the
# largest record the source topic accepts.
DEAD_LETTER_MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class KafkaSettings(Settings):
    """Where the brokers are and how to talk to them (a group in every role's settings)."""

    bootstrap_servers: str = setting(
        DEFAULT_BOOTSTRAP_SERVERS,
        env="STREAMREC_KAFKA_BOOTSTRAP_SERVERS",
        help="Kafka bootstrap servers",
    )
    # Secret: SASL passwords and JAAS configs travel here; describe() masks them.
    extra: Mapping[str, str] = setting(
        env="STREAMREC_KAFKA_CONFIG",
        flag="--kafka-config",
        help="librdkafka properties, name=value,name=value (e.g. security.protocol=SASL_SSL); "
        r"a comma in a value is written \, and a backslash \\",
        secret=True,
        default_factory=dict,
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KafkaSettings:
        return cls.load(environ)

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """librdkafka configuration: bootstrap, the extra properties, then ``overrides``."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, **self.extra}
        config.update({key.replace("_", "."): value for key, value in overrides.items()})
        return config

    # describe() comes from Settings: the extra properties go through mask_properties.


class ConsumerErrors:
    """Says what a consumer's non-fatal errors are, once a minute per kind.

    librdkafka retries them by itself, so the loop goes on; but a denied topic or
    group (an ACL missing on a secured cluster) never heals, and a consumer that
    waits on it without a word looks idle rather than refused.
    """

    def __init__(self, logger: logging.Logger, every_s: float = 60.0) -> None:
        self._logger = logger
        self._every_s = every_s
        self._last: dict[int, float] = {}

    def seen(self, error: Any) -> bool:
        """Log ``error`` unless its kind was logged within the interval; True if logged."""
        now = time.monotonic()
        code = error.code()
        if now - self._last.get(code, -self._every_s) < self._every_s:
            return False
        self._last[code] = now
        self._logger.warning("Kafka consumer error (librdkafka retries): %s", error.str())
        return True


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    config: Mapping[str, str] = field(default_factory=dict)


def dead_letter_spec(name: str) -> TopicSpec:
    return TopicSpec(name, partitions=1, config={"max.message.bytes": str(DEAD_LETTER_MAX_BYTES)})


# The broker stamps each record with its own clock when it appends it: on the requests
# topic this is when a request entered Kafka, where the worker's end-to-end latency starts,
# whatever time the producer put in the record (a replay of 2017 events, a skewed clock).
LOG_APPEND_TIME: Mapping[str, str] = {"message.timestamp.type": "LogAppendTime"}


def request_topic_spec(name: str, partitions: int) -> TopicSpec:
    """A requests topic: its records carry the broker's append time (:data:`LOG_APPEND_TIME`)."""
    return TopicSpec(name, partitions, config=dict(LOG_APPEND_TIME))


def ensure_topics(
    settings: KafkaSettings, specs: Iterable[TopicSpec], timeout_s: float = 30.0
) -> list[str]:
    """Create the topics that do not exist yet; return the names created.

    Existing topics are left as they are: changing partition counts under a
    running pipeline would break per-user ordering.
    """
    admin = AdminClient(settings.client_config())
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    wanted = [
        NewTopic(spec.name, num_partitions=spec.partitions, config=dict(spec.config))
        for spec in specs
        if spec.name not in existing
    ]
    if not wanted:
        return []
    created = []
    for name, future in admin.create_topics(wanted, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
            created.append(name)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    _wait_for_leaders(admin, created, timeout_s)
    return created


# EX_TEMPFAIL: the exit of a part that ends so that its restart resumes cleanly (Kafka
# away past every timeout, a client blocked for good); a supervisor restarts it.
EXIT_RESTART = 75
# Between two tries while the brokers are away at start.
START_RETRY_S = 2.0


MIN_ATTEMPT_S = 5.0


def ensure_topics_once_up(
    settings: KafkaSettings, specs: Iterable[TopicSpec], wait_s: float
) -> list[str] | None:
    """:func:`ensure_topics`, waiting up to ``wait_s`` for the brokers; None if they never came.

    A part started while Kafka restarts (a supervisor restarting it, a rollout during
    a broker upgrade) waits for it, as it would in the middle of its work, instead
    of crashing on its first metadata request.
    """
    specs = list(specs)
    give_up = time.monotonic() + wait_s
    while True:
        try:
            # Each attempt within what is left of the wait (an admin call's own default,
            # 30 s, made a 6 s wait take 30), but long enough for leaders to be elected.
            attempt_s = max(give_up - time.monotonic(), MIN_ATTEMPT_S)
            return ensure_topics(settings, specs, timeout_s=attempt_s)
        except KafkaException as exc:
            if time.monotonic() + START_RETRY_S > give_up:
                _log.error("Kafka unreachable for %.0f s: %s", wait_s, exc.args[0])
                return None
            _log.warning("waiting for Kafka: %s", exc.args[0])
            time.sleep(START_RETRY_S)


def _wait_for_leaders(admin: AdminClient, topics: list[str], timeout_s: float) -> None:
    """Block until every partition of ``topics`` has a leader.

    Creation returns before leaders are elected; reading offsets or producing in
    that gap fails with NOT_LEADER_FOR_PARTITION.
    """
    deadline = time.monotonic() + timeout_s
    while topics:
        metadata = admin.list_topics(timeout=timeout_s).topics
        topics = [name for name in topics if not _has_leaders(metadata.get(name))]
        if topics and time.monotonic() > deadline:
            raise TimeoutError(f"no partition leaders for {topics} after {timeout_s} s")
        if topics:
            time.sleep(0.1)


def _has_leaders(topic: Any) -> bool:
    return (
        topic is not None
        and topic.error is None
        and bool(topic.partitions)
        and all(part.leader >= 0 for part in topic.partitions.values())
    )
