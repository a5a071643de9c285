"""Read-your-writes on the real stack: a click, at once a request, and the answer knows the click.

The worker runs as a subprocess against the real Kafka, Redis and Triton. The
"feature path stopped" case is the store simply never receiving the click; the
answers show whether the trigger made it into the features (the folded click
seeds the embedding route, and a viewed item is not recommended back).
"""

from __future__ import annotations

import time

import pytest

from inference.worker.freshness import PROBE_EVERY_S
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient
from schemas.codec import wall_clock_ms
from schemas.features import UserRecentEvents, pack_event
from schemas.records import BehaviorEvent, RecRequest
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerTopics, produce
from tests.inference.worker.test_worker_integration import ask
from tests.inference.worker.world import World, write_features

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
# Users the world never wrote: their only history is the trigger itself.
NEW_USERS = [2**41 + i for i in range(10)]


def click(world: World, user: int, rank: int = 0) -> BehaviorEvent:
    """A view, now, of one of the model's known items."""
    art = world.artifacts
    item = int(art.popular_items[rank])
    category = int(art.item_categories[2:][art.vocab.item_ids.tolist().index(item)])
    return BehaviorEvent(user, item, category, "pv", wall_clock_ms())


def asked_after(event: BehaviorEvent, request_id: str) -> RecRequest:
    return RecRequest(request_id, event.user_id, event.ts, k=10, trigger=event)


def store(client: OnlineClient, project: str, event: BehaviorEvent) -> None:
    packed = pack_event(event.ts, event.item_id, event.category_id, event.behavior)
    write_features(client, project, [UserRecentEvents(event.user_id, event.ts, [packed])])


def test_the_answer_includes_the_click_whether_or_not_the_store_has_it(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    world_project: str,
    redis_client: OnlineClient,
    start_worker: StartWorker,
) -> None:
    topics = WorkerTopics.create(kafka)
    # Viewed items excluded: a click in the features then shows in the answer as a gap.
    worker = start_worker(
        topics, triton=(triton.grpc_url, triton.model), triton_timeout_ms="20000",
        exclude_behaviors="pv,buy",
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    try:
        # Feature path stopped: nothing ever writes these clicks; the worker folds them in.
        unseen = [click(world, user, rank) for rank, user in enumerate(NEW_USERS[:3])]
        # Feature path caught up: the store holds the click before the request is read.
        seen = click(world, NEW_USERS[3], rank=5)
        store(redis_client, world_project, seen)
        plain = RecRequest("no-trigger", NEW_USERS[4], wall_clock_ms(), k=10)
        requests = [*(asked_after(e, f"folded-{n}") for n, e in enumerate(unseen)),
                    asked_after(seen, "stored"), plain]  # fmt: skip
        answers = ask(kafka, topics, reader, requests)
        for n, event in enumerate(unseen):
            rec = answers[f"folded-{n}"]
            assert rec.trigger_features == "folded", worker.output()[-3000:]
            assert not rec.degraded, rec.degraded_reasons
            # The click is in the features: it seeds the embedding route, and the
            # just-viewed item is not recommended back.
            assert "embedding" in {i.route for i in rec.items}
            assert event.item_id not in {i.item_id for i in rec.items}
        stored = answers["stored"]
        assert stored.trigger_features == "store" and not stored.degraded
        assert stored.features_at is not None and stored.features_at >= seen.ts
        assert seen.item_id not in {i.item_id for i in stored.items}
        # Without a trigger an unknown user gets the popular fallback and no verdict.
        assert answers["no-trigger"].trigger_features is None
        assert {i.route for i in answers["no-trigger"].items} == {"popular"}
        metrics = worker.metrics()
        assert 'streamrec_worker_trigger_features_total{outcome="folded"} 3.0' in metrics
        assert 'streamrec_worker_trigger_features_total{outcome="store"} 1.0' in metrics
    finally:
        reader.close()


def test_without_folding_the_worker_waits_for_the_store_then_flags_the_answer(
    kafka: KafkaSettings,
    triton: TritonServer,
    world: World,
    world_project: str,
    redis_client: OnlineClient,
    start_worker: StartWorker,
) -> None:
    topics = WorkerTopics.create(kafka)
    start_worker(
        topics, triton=(triton.grpc_url, triton.model), triton_timeout_ms="20000",
        fold_trigger="false", fresh_wait_ms="3000", exclude_behaviors="pv,buy",
    )  # fmt: skip
    reader = OutputReader(kafka, topics.output)
    try:
        # Warm up: the first answer pays the worker's start-up.
        ask(kafka, topics, reader, [RecRequest("warm", NEW_USERS[9], wall_clock_ms())])
        # The feature path stays stopped: the 3 s budget runs out, the answer is flagged.
        lost = click(world, NEW_USERS[5])
        sent = time.monotonic()
        answer = ask(kafka, topics, reader, [asked_after(lost, "lost")])["lost"]
        assert time.monotonic() - sent >= 3.0  # it waited out its budget ...
        assert answer.trigger_features == "missing"  # ... and then said so
        assert answer.degraded and answer.degraded_reasons == ["features_behind_trigger"]
        assert {i.route for i in answer.items} == {"popular"}

        # That fruitless wait was the worker's first: it shut the gate, and the next
        # batch to wait is the probe a second later (inference/worker/freshness.py).
        time.sleep(PROBE_EVERY_S)
        # The store catches up within the budget: the waiting worker sees the click.
        late = click(world, NEW_USERS[6], rank=7)
        produce(kafka, topics.requests, [asked_after(late, "late")])
        time.sleep(1.0)
        store(redis_client, world_project, late)
        reader.read_until(len(reader.raw) + 1, timeout_s=120)
        caught = {r.request_id: r for r in reader.recommendations()}["late"]
        assert caught.trigger_features == "store" and not caught.degraded
        assert late.item_id not in {i.item_id for i in caught.items}
    finally:
        reader.close()
