"""The secured broker for real: one broker for the module, started as `up` starts it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from jobs.localstack import Stack, StackSettings
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.kafka_broker import KafkaService, client_properties
from runtime.kafka import KafkaSettings, TopicSpec, dead_letter_spec, ensure_topics
from schemas.topics import REC_REQUESTS, RECOMMENDATIONS, USER_BEHAVIOR, dead_letter_topic
from tests.conftest import REPO_ROOT, free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackSettings]:
    settings = StackSettings(
        home=tmp_path_factory.mktemp("secured"),
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")),
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
        secure=True,
    )
    stack = Stack(settings)
    stack.up(["kafka"])
    try:
        yield settings
    finally:
        stack.down(["kafka"])


def kafka_as(settings: StackSettings, user: str) -> KafkaSettings:
    return KafkaSettings(settings.kafka_bootstrap, client_properties(settings, user))


def produce(config: dict[str, Any], topic: str) -> KafkaError | None:
    """The delivery error of one record (None when delivered)."""
    errors: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 10_000})
    producer.produce(topic, b"x", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    assert errors, "no delivery report"
    return errors[0]


def test_properties_file_and_secrets_are_private(secured: StackSettings) -> None:
    service = KafkaService(secured)
    assert stat.S_IMODE(service.properties.stat().st_mode) == 0o600
    text = service.properties.read_text()
    assert "SASL_SSL://127.0.0.1" in text
    passwords = ensure_credentials(secured.secrets_dir).kafka
    # Only the admin's password is in the broker's config; none in what `up` prints.
    assert passwords["admin"] in text
    assert not any(p in str(Stack(secured).exports()) for p in passwords.values())
    assert not (service.dir / "format.args").exists()


def test_admin_creates_topics(secured: StackSettings) -> None:
    admin = kafka_as(secured, "admin")
    specs = [TopicSpec(REC_REQUESTS, 2), TopicSpec(RECOMMENDATIONS, 2), TopicSpec(USER_BEHAVIOR)]
    specs.append(dead_letter_spec(dead_letter_topic(REC_REQUESTS)))
    ensure_topics(admin, specs)
    names = AdminClient(admin.client_config()).list_topics(timeout=10).topics
    assert {REC_REQUESTS, RECOMMENDATIONS, USER_BEHAVIOR} <= set(names)


def test_worker_consumes_requests_and_produces_recommendations(secured: StackSettings) -> None:
    ensure_topics(kafka_as(secured, "admin"), [TopicSpec(REC_REQUESTS), TopicSpec(RECOMMENDATIONS)])
    assert produce(kafka_as(secured, "ingest").client_config(), REC_REQUESTS) is None
    worker = kafka_as(secured, "worker")
    # Its own start-up check finds the topics (it may describe them) and creates none.
    ensure_topics(worker, [TopicSpec(REC_REQUESTS), TopicSpec(RECOMMENDATIONS)])
    group = {"group.id": "streamrec-worker-test", "auto.offset.reset": "earliest"}
    consumer = Consumer(worker.client_config(**group))
    try:
        consumer.subscribe([REC_REQUESTS])
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None:
                break
        assert message is not None and message.error() is None, message and message.error()
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    assert produce(worker.client_config(), RECOMMENDATIONS) is None
    assert produce(worker.client_config(), dead_letter_topic(REC_REQUESTS)) is None


def test_worker_may_not_write_events(secured: StackSettings) -> None:
    ensure_topics(kafka_as(secured, "admin"), [TopicSpec(USER_BEHAVIOR)])
    error = produce(kafka_as(secured, "worker").client_config(), USER_BEHAVIOR)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_worker_may_not_join_other_groups(secured: StackSettings) -> None:
    config = kafka_as(secured, "worker").client_config(**{"group.id": "someone-else"})
    consumer = Consumer(config)
    try:
        consumer.subscribe([REC_REQUESTS])
        polled = (consumer.poll(0.5) for _ in range(20))
        errors = [error for m in polled if m is not None and (error := m.error()) is not None]
    finally:
        consumer.close()
    assert any(e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED for e in errors), errors


def _refused(config: dict[str, Any]) -> list[KafkaError]:
    """Errors a client reports while its metadata request fails; asserts it does fail."""
    seen: list[KafkaError] = []
    callbacks: dict[str, Any] = {"error_cb": seen.append, "log_level": 0}
    admin = AdminClient({**config, **callbacks})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(1)  # error_cb runs only when the client is polled
    return seen


def test_plaintext_and_anonymous_clients_are_refused(secured: StackSettings) -> None:
    _refused({"bootstrap.servers": secured.kafka_bootstrap})
    # TLS without SASL: the listener wants a SCRAM login first.
    ca = client_properties(secured, "admin")["ssl.ca.location"]
    tls_only = {"security.protocol": "SSL", "ssl.ca.location": ca}
    _refused({"bootstrap.servers": secured.kafka_bootstrap, **tls_only})


def test_a_wrong_password_is_refused(secured: StackSettings) -> None:
    config = kafka_as(secured, "worker").client_config(**{"sasl.password": "not-the-password"})
    errors = _refused(config)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_controller_port_refuses_clients_without_the_cas_certificate(
    secured: StackSettings,
) -> None:
    bootstrap = f"127.0.0.1:{secured.kafka_controller_port}"
    _refused({"bootstrap.servers": bootstrap})
    ca = client_properties(secured, "admin")["ssl.ca.location"]
    _refused({"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca})
