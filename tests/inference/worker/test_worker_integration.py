"""The worker on the real stack: Kafka, Redis (Feast format) and Triton, as a subprocess."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from inference.worker.inventory import mark
from inference.worker.metrics import STAGES
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient, connect
from schemas.codec import wall_clock_ms
from schemas.features import UserRecentEvents, pack_event
from schemas.online.feast_format import field_hash, redis_key
from schemas.records import Recommendation, RecRequest
from schemas.views import VIEWS
from tests.conftest import RedisClusterStack, TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import (
    OutputReader,
    Samples,
    WorkerProcess,
    WorkerTopics,
    produce,
    sample,
)
from tests.inference.worker.world import (
    World,
    changelog,
    plant_bytes,
    requests_for,
    write_features,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
UNKNOWN_USERS = [2**40 + i for i in range(10)]
REPLAYED_2017 = 1_511_539_200_000  # the Taobao day's event time


def by_request(recs: list[Recommendation]) -> dict[str, Recommendation]:
    return {r.request_id: r for r in recs}


def ask(
    kafka: KafkaSettings,
    topics: WorkerTopics,
    reader: OutputReader,
    requests: list[RecRequest],
    worker: WorkerProcess | None = None,
) -> dict[str, Recommendation]:
    """Send ``requests``; the answers to them once all have arrived (a failure to get
    them shows the end of ``worker``'s log)."""
    before = len(reader.raw)
    produce(kafka, topics.requests, requests)
    try:
        reader.read_until(before + len(requests), timeout_s=120)
    except AssertionError as missing:
        if worker is None:
            raise
        raise AssertionError(f"{missing}; the worker said:\n{worker.output()[-3000:]}") from None
    wanted = {r.request_id for r in requests}
    return {k: v for k, v in by_request(reader.recommendations()).items() if k in wanted}


def test_each_request_gets_one_answer_none_bought_and_fresh_clicks_change_it(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    world_project: str,
    redis_client: OnlineClient,
    start_worker: StartWorker,
) -> None:
    topics = WorkerTopics.create(kafka)
    # A generous budget: this test checks answers, not speed, on a shared CPU. Viewed
    # items excluded too, so that fresh clicks must disappear from the answer.
    worker = start_worker(
        topics, triton=(triton.grpc_url, triton.model), triton_timeout_ms="20000",
        exclude_behaviors="pv,buy",
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    try:
        users = world.users[:400] + UNKNOWN_USERS
        requests = list(requests_for(users, "first", k=10))
        answers = ask(kafka, topics, reader, requests, worker)
        # Two more seconds of reading: a duplicate answer would arrive in them.
        reader.settle(2.0)
        counts = Counter(r.request_id for r in reader.recommendations())
        assert set(counts) == {r.request_id for r in requests}, worker.output()[-3000:]
        assert max(counts.values()) == 1
        bought = world.bought()
        for request in requests:
            rec = answers[request.request_id]
            assert rec.user_id == request.user_id
            assert not rec.degraded, (rec.degraded_reasons, worker.output()[-3000:])
            assert rec.model_version.startswith(triton.model)
            assert 0 < len(rec.items) <= request.k
            assert not {i.item_id for i in rec.items} & bought.get(request.user_id, set())
        cold = [answers[r.request_id] for r in requests if r.user_id in UNKNOWN_USERS]
        assert all(rec.items and rec.features_at is None for rec in cold)
        assert {i.route for rec in cold for i in rec.items} == {"popular"}
        routes = Counter(i.route for rec in answers.values() for i in rec.items)
        assert routes["embedding"] and routes["trend"]

        # New clicks through the feature writer's path change the user's answer.
        user = world.users[0]
        old = answers["first-0"]
        clicked = [i.item_id for i in old.items[:3]]
        # Answers hold items outside the vocabulary too (trend, recent): the stream knows all.
        categories = {e.item_id: e.category_id for e in world.events}
        now = wall_clock_ms()
        events = [pack_event(now - 10 + n, item, categories[item], "pv")
                  for n, item in enumerate(clicked)]  # fmt: skip
        write_features(redis_client, world_project, [UserRecentEvents(user, now, events)])
        fresh = ask(kafka, topics, reader, [RecRequest(request_id="after-click", user_id=user,
                                                       ts=wall_clock_ms(), k=10)])  # fmt: skip
        new = fresh["after-click"]
        assert [i.item_id for i in new.items] != [i.item_id for i in old.items]
        assert not {i.item_id for i in new.items} & set(clicked)
        assert new.features_at is not None and new.features_at >= now

        # Items marked out of stock disappear from the answers.
        gone = [i.item_id for i in new.items[:2]]
        mark(redis_client, out_of_stock=gone, project=world_project)
        again = ask(kafka, topics, reader, [RecRequest(request_id="after-stock", user_id=user,
                                                       ts=wall_clock_ms(), k=10)])  # fmt: skip
        assert not {i.item_id for i in again["after-stock"].items} & set(gone)

        # A replayed request stamped with 2017: its latency runs from its Kafka append.
        before = worker.samples()
        replayed = RecRequest(request_id="replayed", user_id=user, ts=REPLAYED_2017, k=10)
        assert ask(kafka, topics, reader, [replayed])["replayed"].items
        assert_timed_from_kafka_append(worker, before)

        # Malformed requests go to the dead-letter topic; the loop goes on.
        bad = [b"not json", b'{"request_id": "x", "user_id": -1, "ts": 1}', b"{}"]
        produce(kafka, topics.requests, bad)
        after_bad = ask(kafka, topics, reader, list(requests_for(users[:5], "after-bad")))
        assert len(after_bad) == 5
        dlq = OutputReader(kafka, topics.dlq)
        dlq.read_until(3, timeout_s=30)
        letters = dlq.dead_letters()
        dlq.close()
        assert sorted(letter.original for letter in letters) == sorted(bad)
        assert {letter.error_kind for letter in letters} == {"malformed", "schema"}

        # Foreign bytes in a stored row: that row reads as absent, the user is answered.
        corrupt, recent = world.users[1], VIEWS["user_recent_clicks"]
        key = redis_key(recent.join_key, corrupt, world_project)
        plant_bytes(redis_client, key, field_hash(recent.name, "item_ids"), b"\xff not a Value")
        odd = ask(kafka, topics, reader, [RecRequest(request_id="after-corrupt", user_id=corrupt,
                                                     ts=wall_clock_ms(), k=10)])  # fmt: skip
        assert odd["after-corrupt"].items
        metrics = worker.metrics()
        assert 'streamrec_worker_unreadable_rows_total{view="user_recent_clicks"} 1.0' in metrics
        for name in (
            'streamrec_worker_stage_seconds_bucket{le="0.001",stage="features"}',
            "streamrec_worker_end_to_end_seconds_count",
            "streamrec_worker_feature_age_seconds_count",
            'streamrec_worker_dead_letters_total{kind="malformed"} 1.0',
            'streamrec_worker_feature_missing_total{view="user_recent_clicks"}',
            "streamrec_worker_batch_size_count",
            'streamrec_worker_recommendations_total{degraded="false"}',
        ):
            assert name in metrics, name
        assert_every_stage_once_per_batch(worker)
        assert worker.terminate() == 0  # graceful SIGTERM
    finally:
        reader.close()


def test_the_worker_answers_from_a_redis_cluster(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    world_project: str,
    redis_cluster: RedisClusterStack,
    start_worker: StartWorker,
) -> None:
    """The same world's features in a cluster: found for every known user, fresh clicks
    and stock marks read from the nodes that hold them."""
    client = connect(redis_cluster.url)
    assert write_features(client, world_project, changelog(world.events)) > 0
    topics = WorkerTopics.create(kafka)
    worker = start_worker(
        topics, redis_url=redis_cluster.url, triton=(triton.grpc_url, triton.model),
        triton_timeout_ms="20000", exclude_behaviors="pv,buy",
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    try:
        users = world.users[:200]
        answers = ask(kafka, topics, reader, list(requests_for(users, "cluster", k=10)), worker)
        assert len(answers) == len(users), worker.output()[-3000:]
        assert not [a.degraded_reasons for a in answers.values() if a.degraded]
        assert all(a.features_at is not None for a in answers.values())
        routes = Counter(i.route for rec in answers.values() for i in rec.items)
        assert routes["embedding"] and routes["trend"]

        user, old = world.users[0], answers["cluster-0"]
        clicked = [i.item_id for i in old.items[:3]]
        now = wall_clock_ms()
        events = [pack_event(now - 10 + n, item, 1, "pv") for n, item in enumerate(clicked)]
        write_features(client, world_project, [UserRecentEvents(user, now, events)])
        mark(client, out_of_stock=[i.item_id for i in old.items[3:5]], project=world_project)
        request = RecRequest(request_id="cluster-after", user_id=user, ts=wall_clock_ms(), k=10)
        new = ask(kafka, topics, reader, [request])["cluster-after"]
        assert new.features_at is not None and new.features_at >= now
        shown = {i.item_id for i in new.items}
        assert not shown & set(clicked)  # just viewed: excluded, so the click was read
        assert not shown & {i.item_id for i in old.items[3:5]}  # out of stock
        assert worker.terminate() == 0
    finally:
        reader.close()
        client.close()


def assert_timed_from_kafka_append(worker: WorkerProcess, before: Samples) -> None:
    """One more answer, in the low latency buckets; its event-time lag over a year."""
    e2e, lag = "streamrec_worker_end_to_end_seconds", "streamrec_worker_request_event_lag_seconds"
    deadline = time.monotonic() + 10  # the answer is counted just after it is delivered
    while True:
        after = worker.samples()
        grew = {key: value - before.get(key, 0.0) for key, value in after.items()}
        if sample(grew, f"{e2e}_count") >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sample(grew, f"{e2e}_count") == 1
    assert sample(grew, f"{e2e}_bucket", le="2.5") == 1  # low buckets, not the top one
    assert sample(grew, f"{lag}_count") == 1
    assert sample(grew, f"{lag}_bucket", le="31536000.0") == 0  # over a year: +Inf
    assert sample(grew, "streamrec_worker_latency_origin_total", origin="log_append_time") == 1


def assert_every_stage_once_per_batch(worker: WorkerProcess) -> None:
    """Each batch observed every stage once (a batch of refused requests only: no features,
    recall, rank or postprocess); idle polls observed none of them."""
    deadline = time.monotonic() + 10
    while True:
        figures = worker.samples()
        batches = sample(figures, "streamrec_worker_batch_size_count")
        counts = {
            stage: sample(figures, "streamrec_worker_stage_seconds_count", stage=stage)
            for stage in STAGES
        }
        if counts["commit"] == batches or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert batches > 0
    for stage in ("poll", "decode", "produce", "commit"):
        assert counts[stage] == batches, (stage, counts, batches)
    for stage in ("features", "recall", "rank", "postprocess"):
        assert 0 < counts[stage] <= batches, (stage, counts, batches)
    assert sample(figures, "streamrec_worker_idle_seconds_total") > 0


def test_redis_down_gives_flagged_answers_from_what_the_worker_has(
    kafka: KafkaSettings, triton: TritonServer, world: World, start_worker: StartWorker
) -> None:
    topics = WorkerTopics.create(kafka)
    worker = start_worker(
        topics,
        redis_url="redis://127.0.0.1:1/0",
        triton=(triton.grpc_url, triton.model),
    )
    reader = OutputReader(kafka, topics.output)
    try:
        campaign = RecRequest(
            request_id="campaign", user_id=world.users[0], ts=wall_clock_ms(), k=5,
            candidates=list(world.artifacts.popular_items[50:60]),
        )  # fmt: skip
        requests = [*requests_for(world.users[:20], "down"), campaign]
        answers = ask(kafka, topics, reader, requests, worker)
        assert len(answers) == len(requests)
        for rec in answers.values():
            assert rec.degraded and "redis_unavailable" in rec.degraded_reasons
            assert rec.items
        assert {i.route for i in answers["campaign"].items} == {"request"}
    finally:
        reader.close()
