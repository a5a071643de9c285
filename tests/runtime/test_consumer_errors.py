"""A consumer's non-fatal errors are said once a minute per kind, not swallowed."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from runtime.kafka import ConsumerErrors


def test_a_denied_topic_is_logged_once_per_interval_and_per_kind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors = ConsumerErrors(logging.getLogger("t"), every_s=60.0)
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed")
    moving = KafkaError(KafkaError._TRANSPORT, "broker went away")
    with caplog.at_level(logging.WARNING, logger="t"):
        assert errors.seen(denied) is True
        assert errors.seen(denied) is False
        assert errors.seen(moving) is True
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka consumer error (librdkafka retries): Topic authorization failed",
        "Kafka consumer error (librdkafka retries): broker went away",
    ]


def test_the_same_kind_is_said_again_after_the_interval() -> None:
    errors = ConsumerErrors(logging.getLogger("t"), every_s=0.0)
    denied = KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "Group authorization failed")
    assert errors.seen(denied) and errors.seen(denied)
