"""What each Kafka principal of the secured stack may do: a table of grants, and applying it.

Every grant names a topic, group or transactional id as a PREFIXED pattern, so one
grant on ``rec-requests`` also covers ``rec-requests-<run>`` topics that tests and
runs make with a suffix. A dead-letter grant names ``<topic>.dlq`` itself, so the
worker may write the requests' dead letters without being able to write requests.
Runs whose names do not start with the defaults (the demo's ``<run>.user-behavior``)
apply the same table over their own :class:`AclNames`.

Each part of the pipeline creates the topics it uses when they are missing
(``ensure_topics`` at start), so a role may CREATE the topics it reads or writes.
Principals without a grant get nothing: the broker runs with
``allow.everyone.if.no.acl.found=false``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from jobs.localstack.errors import StackError
from schemas.topics import (
    FEATURE_DRIFT,
    FEATURE_UPDATES,
    REC_REQUESTS,
    RECOMMENDATIONS,
    USER_BEHAVIOR,
    dead_letter_topic,
)


@dataclass(frozen=True)
class AclNames:
    """The name prefixes the grants are about; the defaults are the pipeline's defaults."""

    events: str = USER_BEHAVIOR
    requests: str = REC_REQUESTS
    recommendations: str = RECOMMENDATIONS
    changelog: str = FEATURE_UPDATES
    drift_alerts: str = FEATURE_DRIFT
    # The roles' default consumer groups (the settings of inference.worker, jobs.features,
    # jobs.feature_writer and jobs.drift; a test checks they still agree). The worker's
    # default transactional ids are `<group>-<host>-<slot>`, so its group prefixes them.
    worker_group: str = "streamrec-worker"
    features_group: str = "streamrec-features"
    writer_group: str = "streamrec-feature-writer"
    drift_group: str = "streamrec-drift"

    def __post_init__(self) -> None:
        for field in fields(self):
            if not getattr(self, field.name):
                # An empty prefix would match every name of its kind.
                raise StackError(f"ACL name {field.name!r} is empty")


Op = AclOperation
TOPIC, GROUP, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
# Describing comes with reading or writing; it is listed for topics a role only
# creates-or-checks, because `ensure_topics` sees only the topics it may describe.
PRODUCE = (Op.WRITE, Op.DESCRIBE, Op.CREATE)
CONSUME = (Op.READ, Op.DESCRIBE, Op.CREATE)
JOIN = (Op.READ,)  # a consumer group: join, commit and fetch offsets
TRANSACT = (Op.WRITE, Op.DESCRIBE)


@dataclass(frozen=True)
class Grant:
    """``operations`` on the resources whose names start with ``AclNames.<name>`` (+ .dlq)."""

    user: str
    resource: ResourceType
    name: str
    operations: tuple[AclOperation, ...]
    dead_letters: bool = False

    def prefix(self, names: AclNames) -> str:
        base: str = getattr(names, self.name)
        return dead_letter_topic(base) if self.dead_letters else base


# The table. `admin` is a super user and needs none; a role absent from a row may not
# do it. The feature writer reads the changelog as `features` (the same job's output).
GRANTS: tuple[Grant, ...] = (
    # Replay and ingest: events and the requests triggered by them, nothing read.
    Grant("ingest", TOPIC, "events", PRODUCE),
    Grant("ingest", TOPIC, "requests", PRODUCE),
    # The Flink feature job (Kafka connector: at-least-once sink, no transactions) and
    # the feature writer, which consumes the changelog into Redis.
    Grant("features", TOPIC, "events", CONSUME),
    # The job reads its dead-letter topic's max.message.bytes to fit dead letters in it.
    Grant("features", TOPIC, "events", (*PRODUCE, Op.DESCRIBE_CONFIGS), dead_letters=True),
    Grant("features", TOPIC, "changelog", (*PRODUCE, Op.READ)),
    Grant("features", TOPIC, "changelog", PRODUCE, dead_letters=True),
    Grant("features", GROUP, "features_group", JOIN),
    Grant("features", GROUP, "writer_group", JOIN),
    # The inference worker, in either delivery mode.
    Grant("worker", TOPIC, "requests", CONSUME),
    Grant("worker", TOPIC, "requests", PRODUCE, dead_letters=True),
    Grant("worker", TOPIC, "recommendations", PRODUCE),
    Grant("worker", GROUP, "worker_group", JOIN),
    Grant("worker", TXN, "worker_group", TRANSACT),
    # The drift monitor: its group also prefixes `<group>-scores`.
    Grant("drift", TOPIC, "changelog", CONSUME),
    Grant("drift", TOPIC, "recommendations", CONSUME),
    Grant("drift", TOPIC, "changelog", PRODUCE, dead_letters=True),
    Grant("drift", TOPIC, "recommendations", PRODUCE, dead_letters=True),
    Grant("drift", TOPIC, "drift_alerts", PRODUCE),
    Grant("drift", GROUP, "drift_group", JOIN),
)


def acl_bindings(
    names: AclNames | None = None, grants: Iterable[Grant] = GRANTS
) -> list[AclBinding]:
    """One ALLOW binding per grant and operation, duplicates dropped, in table order."""
    names = names or AclNames()
    bindings: dict[tuple[Any, ...], AclBinding] = {}
    for grant in grants:
        for operation in grant.operations:
            binding = AclBinding(
                grant.resource,
                grant.prefix(names),
                ResourcePatternType.PREFIXED,
                f"User:{grant.user}",
                "*",
                operation,
                AclPermissionType.ALLOW,
            )
            key = (grant.resource, binding.name, grant.user, operation)
            bindings.setdefault(key, binding)
    return list(bindings.values())


def apply_acls(
    admin_config: Mapping[str, str], bindings: Iterable[AclBinding], timeout_s: float = 30.0
) -> None:
    """Create ``bindings`` as the admin; bindings that exist already are left as they are."""
    bindings = list(bindings)
    if not bindings:
        return
    admin = AdminClient(dict(admin_config))
    try:
        futures = admin.create_acls(bindings, request_timeout=timeout_s)
    except KafkaException as exc:
        raise StackError(f"creating Kafka ACLs failed: {exc}") from exc
    failures = []
    for binding, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            failures.append(f"{binding.principal} {binding.operation} {binding.name}: {exc}")
    if failures:
        raise StackError("creating Kafka ACLs failed:\n" + "\n".join(failures))
