"""Poisoned requests through the running worker: each answered or dead-lettered, whole.

The inputs are the codec fuzzer's (tests/support/poison.py), up to what Kafka's
producer takes. Every valid one must be answered once, every invalid one must be
in the dead-letter topic with its exact bytes and an error kind, and the worker
must still be running.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from runtime.kafka import KafkaSettings, dead_letter_spec, ensure_topics
from schemas.codec import request_codec
from schemas.errors import InvalidRecord
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerTopics, produce
from tests.support.poison import poisoned_requests, sample

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
INPUTS = int(os.environ.get("STREAMREC_FUZZ_INTEGRATION_INPUTS", "1000"))
KINDS = {"oversized", "malformed", "schema", "timestamp"}


def test_poisoned_requests_are_answered_or_dead_lettered_and_the_worker_lives(
    kafka: KafkaSettings, triton: TritonServer, start_worker: StartWorker
) -> None:
    inputs = sample(poisoned_requests(), INPUTS, largest=900_000)
    codec = request_codec()
    valid: list[str] = []
    refused: list[bytes] = []
    for raw in inputs:
        try:
            valid.append(codec.decode(raw).request_id)
        except InvalidRecord:
            refused.append(raw)
    assert valid and refused
    topics = WorkerTopics.create(kafka, partitions=2)
    ensure_topics(kafka, [dead_letter_spec(topics.dlq)])
    worker = start_worker(
        topics, triton=(triton.grpc_url, triton.model), max_candidates="30",
        triton_timeout_ms="20000", fresh_wait_ms="0",
    )  # fmt: skip
    answers = OutputReader(kafka, topics.output)
    letters = OutputReader(kafka, topics.dlq)
    try:
        produce(kafka, topics.requests, inputs)
        deadline = time.monotonic() + 600
        while len(answers.raw) + len(letters.raw) < len(inputs) and time.monotonic() < deadline:
            answers.settle(0.5)
            letters.settle(0.5)
        answers.settle(3)  # anything beyond the inputs would be a duplicate
        letters.settle(1)
        assert worker.process.poll() is None, worker.output()[-3000:]
        assert Counter(r.request_id for r in answers.recommendations()) == Counter(valid)
        dead = letters.dead_letters()
        assert Counter(letter.original for letter in dead) == Counter(refused)
        assert {letter.error_kind for letter in dead} <= KINDS
        assert all(letter.source_topic == topics.requests for letter in dead)
    finally:
        answers.close()
        letters.close()
