"""Dead letters near and over Kafka's 1 MiB default: refused, kept, and never a job failure.

Base64 grows an event by a third, so an event of 0.8-1 MiB (the most the
broker's default takes) makes a dead letter over the producer's default 1 MiB
request size; the job must write it anyway and keep going.
"""

from __future__ import annotations

import signal
import subprocess

import pytest
from confluent_kafka import Producer

from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from schemas.records import DeadLetter
from tests.conftest import TopicFactory
from tests.jobs.features.harness import JobTopics, dead_letters, kill, read_all, start
from tests.jobs.features.test_job_faults_integration import (
    event,
    has_recent_row,
    send,
    wait_until,
)
from tests.jobs.features.test_job_integration import topics_for

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
# The broker's default message.max.bytes is 1 MiB + 12 for a whole batch: this
# leaves room for the key, the record and the batch headers.
NEAR_LIMIT = MIB - 600


def oversized_event(size: int) -> bytes:
    """Valid JSON of exactly ``size`` bytes, refused only for its size."""
    head = b'{"user_id": 1, "item_id": 2, "category_id": 3, "behavior": "pv", "note": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def big_producer(kafka: KafkaSettings) -> Producer:
    # librdkafka refuses messages over 1,000,000 bytes unless told otherwise.
    return Producer(kafka.client_config(**{"message.max.bytes": 2 * MIB}))


def send_big_events_then_a_marker(
    kafka: KafkaSettings, job: subprocess.Popen[str], topics: JobTopics, sizes: list[int]
) -> list[bytes]:
    """Send the big events and a good one after them; wait until the good one is processed."""
    producer = big_producer(kafka)
    payloads = [oversized_event(size) for size in sizes]
    for payload in payloads:
        send(producer, topics.source, payload)
    send(producer, topics.source, event(77, 0), key=b"77")
    marker = has_recent_row(kafka, topics.changelog, 77)

    def processed() -> bool:
        if job.poll() is not None:
            raise AssertionError(
                f"the job ended: {job.stderr.read()[-3000:] if job.stderr else ''}"
            )
        return marker()

    wait_until(processed, "the event after the big ones")
    wait_until(lambda: len(read_all(kafka, topics.dead_letters)) >= len(sizes), "the dead letters")
    return payloads


def assert_refused_for_size(letters: list[DeadLetter], payloads: list[bytes]) -> None:
    assert [letter.original_size for letter in letters] == [len(p) for p in payloads]
    assert {letter.error_kind for letter in letters} == {"oversized"}
    assert all("exceeds the 1024-byte limit" in letter.error for letter in letters)


def test_events_near_one_mib_are_dead_lettered_whole_and_the_job_goes_on(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topics = topics_for(topic_factory, partitions=1)
    job = start(kafka, topics)
    try:
        payloads = send_big_events_then_a_marker(kafka, job, topics, [int(0.9 * MIB), NEAR_LIMIT])
        assert job.poll() is None, "the job keeps running"
    finally:
        kill(job, signal.SIGTERM)
    letters = dead_letters(kafka, topics.dead_letters)
    assert [letter.original for letter in letters] == payloads  # the exact bytes, whole
    assert_refused_for_size(letters, payloads)


def test_a_dead_letter_too_big_for_its_topic_keeps_a_marked_prefix(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    """A dead-letter topic that already exists with a small limit: the original is cut, marked."""
    topics = topics_for(topic_factory, partitions=1)
    limit = 512 * 1024
    ensure_topics(kafka, [TopicSpec(topics.dead_letters, 1, {"max.message.bytes": str(limit)})])
    job = start(kafka, topics)
    try:
        payloads = send_big_events_then_a_marker(kafka, job, topics, [int(0.9 * MIB), 2000])
        assert job.poll() is None, "the job keeps running"
    finally:
        kill(job, signal.SIGTERM)
    big, small = dead_letters(kafka, topics.dead_letters)
    assert_refused_for_size([big, small], payloads)
    assert 0 < len(big.original) < big.original_size  # the marker: shorter than its size
    assert payloads[0].startswith(big.original)
    assert f"first {len(big.original)} of {big.original_size} bytes kept" in big.error
    assert small.original == payloads[1]  # small ones stay whole
    assert "kept" not in small.error
