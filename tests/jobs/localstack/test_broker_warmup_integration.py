"""The broker warm-up on the real broker: every kind of traffic went through, and its
topic is gone afterwards."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient

from jobs.localstack.broker_warmup import warm_broker
from runtime.kafka import KafkaSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def topics(kafka: KafkaSettings) -> set[str]:
    return set(AdminClient(kafka.client_config()).list_topics(timeout=10).topics)


def test_the_warm_up_produces_fetches_and_removes_its_topic(kafka: KafkaSettings) -> None:
    topic = f"t-warm-up-{uuid.uuid4().hex[:8]}"
    seen: list[float] = []

    warmed = warm_broker(kafka, topic, 3.0, seen.append)

    assert warmed.single_produces > 10
    assert warmed.batched_records > warmed.single_produces
    assert warmed.consumed > 0
    assert 3.0 <= warmed.seconds < 20.0
    assert seen and all(0 < s < warmed.seconds + 1 for s in seen)
    assert not {topic, f"{topic}-appended"} & topics(kafka)


def test_no_seconds_no_traffic_and_no_topic(kafka: KafkaSettings) -> None:
    topic = f"t-warm-up-{uuid.uuid4().hex[:8]}"

    assert warm_broker(kafka, topic, 0).consumed == 0
    assert topic not in topics(kafka)
