"""The per-request deadline on the real stack: a backlog older than its budget is answered
at once by the fallback, flagged, and nothing is dropped; fresh requests are ranked."""

from __future__ import annotations

import time

import pytest

from runtime.kafka import KafkaSettings
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerTopics, produce
from tests.inference.worker.test_worker_integration import ask
from tests.inference.worker.world import World, requests_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
DEADLINE_MS = 5_000  # far above a loaded box's p99, so fresh requests are never late


def test_a_backlog_past_its_deadline_is_answered_flagged_and_fresh_requests_are_ranked(
    kafka: KafkaSettings, triton: TritonServer, world: World, start_worker: StartWorker
) -> None:
    topics = WorkerTopics.create(kafka)
    backlog = list(requests_for(world.users[:20], "backlog"))
    produce(kafka, topics.requests, backlog)
    # The backlog ages past the deadline before any worker reads it.
    time.sleep(DEADLINE_MS / 1000 + 1)
    start_worker(
        topics, triton=(triton.grpc_url, triton.model), triton_timeout_ms="20000",
        deadline_ms=str(DEADLINE_MS),
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    try:
        reader.read_until(len(backlog), timeout_s=120)
        old = {r.request_id: r for r in reader.recommendations()}
        assert set(old) == {r.request_id for r in backlog}  # all answered, none dropped
        for rec in old.values():
            assert rec.degraded and rec.degraded_reasons == ["deadline_exceeded"]
            assert rec.items and rec.model_version.startswith("fallback")
        fresh = ask(kafka, topics, reader, list(requests_for(world.users[:5], "fresh")))
        assert len(fresh) == 5
        for rec in fresh.values():
            assert not rec.degraded, rec.degraded_reasons
            assert rec.model_version.startswith(triton.model)
    finally:
        reader.close()
