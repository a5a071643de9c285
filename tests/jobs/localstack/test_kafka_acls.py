from dataclasses import replace

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from jobs.localstack.errors import StackError
from jobs.localstack.kafka_acls import AclNames, acl_bindings

Op = AclOperation


def allowed(bindings: list[AclBinding], user: str, kind: ResourceType, name: str) -> set[object]:
    """What ``user`` may do to the resource ``name``, by prefix match as the broker does."""
    return {
        b.operation
        for b in bindings
        if b.principal == f"User:{user}" and b.restype == kind and name.startswith(b.name)
    }


def test_every_binding_allows_a_prefix_from_any_host() -> None:
    bindings = acl_bindings()
    assert bindings
    for binding in bindings:
        assert binding.resource_pattern_type == ResourcePatternType.PREFIXED
        assert binding.permission_type == AclPermissionType.ALLOW
        assert binding.host == "*"
    keys = [(b.restype, b.name, b.principal, b.operation) for b in bindings]
    assert len(keys) == len(set(keys))


def test_the_worker_reads_requests_and_writes_answers_and_dead_letters_only() -> None:
    bindings = acl_bindings()
    topic = ResourceType.TOPIC
    assert {Op.READ, Op.DESCRIBE} <= allowed(bindings, "worker", topic, "rec-requests")
    assert Op.WRITE not in allowed(bindings, "worker", topic, "rec-requests")
    assert Op.WRITE in allowed(bindings, "worker", topic, "rec-requests.dlq")
    assert Op.WRITE in allowed(bindings, "worker", topic, "recommendations-run7")
    assert allowed(bindings, "worker", topic, "user-behavior") == set()
    assert allowed(bindings, "worker", topic, "feature-updates") == set()
    assert Op.READ in allowed(bindings, "worker", ResourceType.GROUP, "streamrec-worker-a")
    assert allowed(bindings, "worker", ResourceType.GROUP, "streamrec-drift") == set()
    txn = allowed(bindings, "worker", ResourceType.TRANSACTIONAL_ID, "streamrec-worker-host-0")
    assert txn == {Op.WRITE, Op.DESCRIBE}


def test_each_role_gets_what_its_part_does() -> None:
    bindings = acl_bindings()
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    assert allowed(bindings, "ingest", topic, "user-behavior") == {Op.WRITE, Op.DESCRIBE, Op.CREATE}
    assert Op.READ not in allowed(bindings, "ingest", topic, "rec-requests")
    assert Op.WRITE in allowed(bindings, "ingest", topic, "rec-requests")
    assert Op.READ in allowed(bindings, "features", topic, "user-behavior")
    assert Op.WRITE not in allowed(bindings, "features", topic, "user-behavior")
    assert Op.WRITE in allowed(bindings, "features", topic, "user-behavior.dlq")
    assert {Op.READ, Op.WRITE} <= allowed(bindings, "features", topic, "feature-updates")
    assert Op.READ in allowed(bindings, "features", group, "streamrec-features")
    assert Op.READ in allowed(bindings, "features", group, "streamrec-feature-writer")
    assert Op.READ in allowed(bindings, "drift", topic, "recommendations")
    assert Op.WRITE not in allowed(bindings, "drift", topic, "recommendations")
    assert Op.WRITE in allowed(bindings, "drift", topic, "feature-drift")
    assert Op.READ in allowed(bindings, "drift", group, "streamrec-drift-scores")
    assert not [b for b in bindings if b.principal == "User:admin"]  # a super user


def test_names_of_a_run_replace_the_defaults() -> None:
    names = replace(AclNames(), events="run1.user-behavior", requests="run1.rec-requests")
    bindings = acl_bindings(names)
    assert Op.WRITE in allowed(bindings, "ingest", ResourceType.TOPIC, "run1.user-behavior")
    assert allowed(bindings, "ingest", ResourceType.TOPIC, "user-behavior") == set()
    with pytest.raises(StackError, match="empty"):
        AclNames(events="")


def test_group_prefixes_match_the_parts_default_groups() -> None:
    from inference.worker.settings import WorkerSettings
    from jobs.drift.settings import DriftSettings
    from jobs.feature_writer.settings import WriterSettings
    from jobs.features.settings import FeatureJobSettings

    names = AclNames()
    for settings, name in (
        (WorkerSettings, names.worker_group),
        (FeatureJobSettings, names.features_group),
        (WriterSettings, names.writer_group),
        (DriftSettings, names.drift_group),
    ):
        assert settings.__dataclass_fields__["group_id"].default == name
