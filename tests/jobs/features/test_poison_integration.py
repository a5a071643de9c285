"""Poisoned events through the running feature job: each bad one dead-lettered, whole.

The inputs are the codec fuzzer's (tests/support/poison.py), up to what Kafka's
producer takes. Every event the codec refuses must reach the dead-letter topic
with its exact bytes and the codec's error kind; the only other dead letters are
valid events that came too late for their windows; the job keeps running.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest
from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.errors import InvalidRecord
from tests.conftest import TopicFactory
from tests.jobs.features.harness import dead_letters, kill, start
from tests.jobs.features.test_job_faults_integration import wait_until
from tests.jobs.features.test_job_integration import topics_for
from tests.support.poison import poisoned_events, sample

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
INPUTS = int(os.environ.get("STREAMREC_FUZZ_INTEGRATION_INPUTS", "1000"))


def test_poisoned_events_are_dead_lettered_whole_and_the_job_keeps_running(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    inputs = sample(poisoned_events(), INPUTS, largest=900_000)
    codec = event_codec()
    refused: Counter[tuple[bytes, str]] = Counter()
    for raw in inputs:
        try:
            codec.decode(raw)
        except InvalidRecord as exc:
            refused[(raw, exc.kind)] += 1
    assert 0 < sum(refused.values()) < len(inputs)
    topics = topics_for(topic_factory, partitions=2)
    job = start(kafka, topics)
    try:
        producer = Producer(kafka.client_config(**{"linger.ms": 5}))
        for n, raw in enumerate(inputs):
            producer.produce(topics.source, raw, key=str(n % 97).encode())
            producer.poll(0)
        assert producer.flush(60) == 0

        def all_refused_arrived() -> bool:
            letters = dead_letters(kafka, topics.dead_letters)
            kinds = Counter(letter.error_kind for letter in letters)
            return kinds.total() - kinds["late"] >= refused.total()

        wait_until(all_refused_arrived, "the refused events' dead letters", timeout_s=600)
        assert job.poll() is None, "the job stopped"
        letters = dead_letters(kafka, topics.dead_letters)
        got = Counter((letter.original, letter.error_kind) for letter in letters)
        late = Counter({key: n for key, n in got.items() if key[1] == "late"})
        assert got - late == refused
        for raw, _ in late:
            codec.decode(raw)  # only a valid event can be late
    finally:
        kill(job, signal.SIGTERM)
