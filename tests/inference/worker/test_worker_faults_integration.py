"""Fault tests: the worker (a subprocess) killed, Triton stopped, workers joining and leaving."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference.serving import repository
from jobs.localstack import Stack, StackSettings
from jobs.localstack.process import read_pidfile
from runtime.kafka import KafkaSettings
from runtime.online.connect import connect
from schemas.codec import wall_clock_ms
from schemas.records import Recommendation, RecRequest
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerTopics, produce
from tests.inference.worker.world import World, changelog, requests_for, write_features
from tests.support.stacks import free_port, own_stack_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
# Small candidate lists and a generous budget: these tests are about delivery, not speed.
FAST = {"max_candidates": "30", "triton_timeout_ms": "20000"}
RESUMED_WITHIN_S = 40


def many_requests(world: World, n: int, prefix: str) -> list[RecRequest]:
    users = (world.users * (n // len(world.users) + 1))[:n]
    return list(requests_for(users, prefix, k=5))


def ask_and_wait(
    kafka: KafkaSettings,
    topics: WorkerTopics,
    reader: OutputReader,
    requests: list[RecRequest],
    prefix: str,
) -> list[Recommendation]:
    """Send ``requests`` (ids ``<prefix>-…``); their answers, once all have arrived."""
    before = len(reader.raw)
    produce(kafka, topics.requests, requests)
    reader.read_until(before + len(requests), timeout_s=120)
    return [r for r in reader.recommendations() if r.request_id.startswith(prefix + "-")]


def kill_mid_run_and_restart(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
    read_committed: bool,
    **worker: str,
) -> tuple[list[RecRequest], list[Recommendation]]:
    topics = WorkerTopics.create(kafka)
    requests = many_requests(world, 1500, "kill")
    first = start_worker(topics, triton=(triton.grpc_url, triton.model), **FAST, **worker)
    reader = OutputReader(kafka, topics.output, read_committed=read_committed)
    try:
        produce(kafka, topics.requests, requests)
        reader.read_until(200, timeout_s=180)
        first.kill()  # SIGKILL: no chance to commit, flush or abort
        seen_at_kill = len(reader.raw)
        assert 0 < seen_at_kill < len(requests), first.output()[-2000:]
        second = start_worker(topics, triton=(triton.grpc_url, triton.model), **FAST, **worker)
        # The killed worker keeps its partitions for the session timeout (10 s; Kafka's
        # default is 45 s) and the restart starts in seconds (it took 13 s to import the
        # Feast SDK): answers resume well within 40 s.
        restarted = time.monotonic()
        reader.read_until(seen_at_kill + 1, timeout_s=120)
        assert time.monotonic() - restarted < RESUMED_WITHIN_S, second.output()[-2000:]
        reader.read_until(len(requests), timeout_s=300, settle_s=5)
        assert second.terminate() == 0, second.output()[-2000:]
        return requests, reader.recommendations()
    finally:
        reader.close()


def test_sigkill_mid_run_loses_no_request_at_least_once(
    kafka: KafkaSettings, triton: TritonServer, world: World, start_worker: StartWorker
) -> None:
    requests, recs = kill_mid_run_and_restart(kafka, triton, world, start_worker, False)
    assert {r.request_id for r in recs} == {r.request_id for r in requests}


def test_sigkill_mid_run_loses_and_duplicates_nothing_exactly_once(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
    tmp_path: Path,
) -> None:
    """With the default transactional id: the restart takes the killed worker's slot, so its
    init_transactions aborts the transaction left open instead of read-committed readers
    waiting for the broker's timeout."""
    requests, recs = kill_mid_run_and_restart(
        kafka, triton, world, start_worker, True,
        exactly_once="true", instance_lock_dir=str(tmp_path / "slots"),
    )  # fmt: skip
    counts = Counter(r.request_id for r in recs)
    assert set(counts) == {r.request_id for r in requests}
    assert max(counts.values()) == 1, counts.most_common(3)
    ids = [line.split("transactional id ")[1].split()[0]
           for log in sorted(tmp_path.glob("worker-*.log"))
           for line in log.read_text().splitlines() if "transactional id " in line]  # fmt: skip
    assert len(ids) == 2 and ids[0] == ids[1] and ids[0].endswith("-0"), ids


def test_workers_in_one_group_share_partitions_and_survive_rebalances(
    kafka: KafkaSettings, triton: TritonServer, world: World, start_worker: StartWorker
) -> None:
    topics = WorkerTopics.create(kafka, partitions=4)
    requests = many_requests(world, 900, "group")
    thirds = [requests[i : i + 300] for i in range(0, 900, 300)]
    triton_at = (triton.grpc_url, triton.model)
    first = start_worker(topics, triton=triton_at, **FAST)
    reader = OutputReader(kafka, topics.output)
    try:
        produce(kafka, topics.requests, thirds[0])
        reader.read_until(100, timeout_s=180)
        second = start_worker(topics, triton=triton_at, **FAST)  # joins: partitions move
        produce(kafka, topics.requests, thirds[1])
        reader.read_until(400, timeout_s=180)
        assert first.terminate() == 0, first.output()[-2000:]  # leaves: partitions move back
        produce(kafka, topics.requests, thirds[2])
        reader.read_until(len(requests), timeout_s=300, settle_s=3)
        assert {r.request_id for r in reader.recommendations()} == {
            r.request_id for r in requests
        }, second.output()[-2000:]
        assert "assigned" in second.output()
    finally:
        reader.close()


def own_stack(tmp_path: Path, **overrides: Any) -> tuple[Stack, StackSettings]:
    settings = own_stack_settings(tmp_path / "home", **overrides)
    return Stack(settings), settings


@pytest.fixture(params=["primary", "replica"])
def own_redis(
    request: pytest.FixtureRequest, world: World, world_project: str, tmp_path: Path
) -> Iterator[tuple[Stack, StackSettings]]:
    """A Redis of this test's own (it gets stopped), holding the world's features; with
    a read replica, which the worker then reads from, for ``replica``."""
    replica = {"redis_replica_port": free_port()} if request.param == "replica" else {}
    local, settings = own_stack(tmp_path, **replica)
    local.up(["redis"])
    client = connect(settings.redis_url)
    try:
        assert write_features(client, world_project, changelog(world.events)) > 0
        yield local, settings
    finally:
        client.close()
        local.down(["redis"])


def test_redis_stopped_mid_run_gives_flagged_answers_within_its_timeout(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    start_worker: StartWorker,
    own_redis: tuple[Stack, StackSettings],
) -> None:
    """A stopped Redis accepts connections and never answers: each call must end at the
    worker's timeout, not after a client's retries and backoff. With a read replica the
    feature reads go there and only there: the replica stopped fails them while the
    primary is up."""
    local, settings = own_redis
    replica = settings.redis_replica_port != 0
    topics = WorkerTopics.create(kafka)
    start_worker(
        topics, redis_url=settings.redis_url, triton=(triton.grpc_url, triton.model),
        max_candidates="30", triton_timeout_ms="20000", redis_timeout_ms="200",
        retry_after_ms="500", **({"redis_read_url": settings.redis_replica_url} if replica else {}),
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    pid = read_pidfile(local.services["redis-replica" if replica else "redis"].pidfile)
    assert pid is not None
    primary = connect(settings.redis_url)

    def ask(prefix: str, n: int = 20) -> list[Recommendation]:
        return ask_and_wait(kafka, topics, reader, many_requests(world, n, prefix), prefix)

    try:
        before = ask("before")
        assert not any(r.degraded for r in before)
        assert all(r.features_at is not None for r in before)  # the users' rows were read
        os.kill(pid, signal.SIGSTOP)
        try:
            started = wall_clock_ms()
            stopped = ask("stopped")
            assert len(stopped) == 20
            for rec in stopped:
                assert rec.degraded and rec.degraded_reasons == ["redis_unavailable"]
            # A few probes of 200 ms each at most; redis-py 6's default retries alone
            # would take seconds per call.
            assert max(r.produced_at for r in stopped) - started < 5000
            assert not replica or primary.ping()  # only the replica's reads failed
        finally:
            os.kill(pid, signal.SIGCONT)
        resumed_by = time.monotonic() + 10
        recovered: list[Recommendation] = []
        while time.monotonic() < resumed_by and not recovered:
            recovered = [r for r in ask(f"after{time.monotonic_ns()}", 5) if not r.degraded]
        assert recovered, "answers did not return to normal within 10 s of SIGCONT"
    finally:
        primary.close()
        reader.close()


@pytest.fixture
def own_triton(world: World, tmp_path: Path) -> Iterator[tuple[Stack, str]]:
    """A Triton of this test's own (it gets stopped), serving the world's model."""
    models = tmp_path / "models"
    repository.publish(world.model_dir, models)
    local, settings = own_stack(tmp_path, triton_model_repository=models)
    local.up(["triton"])
    try:
        yield local, settings.triton_grpc_url
    finally:
        local.down(["triton"])


def test_triton_stopped_mid_run_gives_flagged_fallbacks_then_normal_answers(
    kafka: KafkaSettings,
    world: World,
    start_worker: StartWorker,
    own_triton: tuple[Stack, str],
) -> None:
    local, url = own_triton
    topics = WorkerTopics.create(kafka)
    start_worker(
        topics, triton=(url, "ranker_python"), max_candidates="30",
        triton_timeout_ms="3000", retry_after_ms="500",
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)

    def ask(prefix: str, n: int = 20) -> list[Recommendation]:
        return ask_and_wait(kafka, topics, reader, many_requests(world, n, prefix), prefix)

    try:
        normal = ask("before")
        assert len(normal) == 20 and not any(r.degraded for r in normal)
        local.down(["triton"])
        started = wall_clock_ms()
        down = ask("down")
        assert len(down) == 20
        for rec in down:
            assert rec.degraded and rec.items and rec.model_version.startswith("fallback")
            assert set(rec.degraded_reasons) <= {"triton_unavailable", "triton_timeout"}
        # One failed call at most, then the breaker answers at once: the whole burst
        # within ten Triton timeouts (3 s each), a bound tied to the setting, not the box.
        assert max(r.produced_at for r in down) - started < 10 * 3000
        # Down a while longer, probed all along: gRPC's reconnect backoff grows meanwhile.
        down_until = time.monotonic() + 25
        while time.monotonic() < down_until:
            assert all(r.degraded for r in ask(f"still-down{time.monotonic_ns()}", 2))
            time.sleep(1)
        local.up(["triton"])  # returns once Triton is ready
        # gRPC's default reconnect backoff (up to 120 s) kept answers on the fallback
        # for minutes; the scorer's channel retries every 2 s at most.
        deadline = time.monotonic() + 15
        recovered: list[Recommendation] = []
        while time.monotonic() < deadline and not recovered:
            recovered = [r for r in ask(f"after{time.monotonic_ns()}", 5) if not r.degraded]
        assert recovered, "no normal answer within 15 s of Triton's readiness"
        assert recovered[0].model_version.startswith("ranker_python")
    finally:
        reader.close()
