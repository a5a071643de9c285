"""The fresh view's per-user state expires after ``--state-ttl-ms`` of processing time."""

from __future__ import annotations

import signal
import time

import pytest
from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.features import UserRecentEvents, pack_event
from tests.conftest import TopicFactory
from tests.jobs.features.harness import changelog, kill, start
from tests.jobs.features.test_job_faults_integration import event, send, wait_until
from tests.jobs.features.test_job_integration import topics_for
from tests.schemas.test_reference import MIN, T

pytestmark = pytest.mark.integration

TTL_MS = 5000


def recent_rows(kafka: KafkaSettings, topic: str, user: int) -> list[UserRecentEvents]:
    rows = changelog(kafka, topic)["user_recent"]
    return [row for row in rows if isinstance(row, UserRecentEvents) and row.user_id == user]


def test_a_user_idle_past_the_ttl_starts_afresh_and_an_active_one_does_not(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topics = topics_for(topic_factory, partitions=1)
    job = start(kafka, topics, ["--state-ttl-ms", str(TTL_MS)])
    producer = Producer(kafka.client_config())
    try:
        send(producer, topics.source, event(5, 0, item=10), key=b"5")
        send(producer, topics.source, event(5, 1, item=11), key=b"5")  # within the TTL
        wait_until(lambda: len(recent_rows(kafka, topics.changelog, 5)) == 2, "two rows")
        time.sleep(2 * TTL_MS / 1000)  # idle past the TTL: the state expires
        send(producer, topics.source, event(5, 2, item=12), key=b"5")
        wait_until(lambda: len(recent_rows(kafka, topics.changelog, 5)) == 3, "the third row")
        assert job.poll() is None
    finally:
        kill(job, signal.SIGTERM)
    rows = recent_rows(kafka, topics.changelog, 5)
    packed = [pack_event(T + n * MIN, 10 + n, 100, "pv") for n in range(3)]
    assert [row.events for row in rows] == [packed[:1], packed[:2], packed[2:]]
