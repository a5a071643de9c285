"""The co-visit route on the real stack: clicks through Kafka and the feature writer into
Redis, then the worker (a subprocess, ranking on Triton) proposes what others clicked next.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec
import pytest
from confluent_kafka import Producer

from inference.worker.features import FeatureReader
from inference.worker.inventory import inventory_key
from inference.worker.metrics import WorkerMetrics
from inference.worker.prepare import BatchPreparer
from inference.worker.recall import Candidate
from inference.worker.settings import WorkerSettings
from jobs.feature_writer.cli import build_loop
from jobs.feature_writer.settings import WriterSettings
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient
from schemas.codec import wall_clock_ms
from schemas.features import FeatureUpdate, ItemWindow, UserRecentEvents, pack_event
from schemas.ranking import OOV_INDEX
from schemas.records import RecRequest
from tests.conftest import Endpoints, TopicFactory, TritonServer
from tests.inference.worker.harness import OutputReader, WorkerProcess, WorkerTopics, worker_env
from tests.inference.worker.test_worker_integration import ask
from tests.inference.worker.world import World
from tests.support import requirements

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
MINUTE = 60_000
UNSEEN = 2**52 + 7  # an item the ranker was never trained on
NEW_USER = 2**45 + 1
OTHERS = [2**45 + 10 + n for n in range(3)]


def changelog(world: World, now: int) -> tuple[list[FeatureUpdate], int, int, int]:
    """Others click A, B, then UNSEEN within minutes; the new user clicks A.

    UNSEEN has a trends row (its category is A's); A and B are items the model knows.
    """
    art = world.artifacts
    category = dict(zip(art.vocab.item_ids.tolist(), art.item_categories[2:].tolist(), strict=True))
    a, b = art.popular_items[:2]
    clicks = [(now - 10 * MINUTE, a), (now - 8 * MINUTE, b), (now - 6 * MINUTE, UNSEEN)]
    category_of: dict[int, int] = {a: category[a], b: category[b], UNSEEN: category[a]}
    events = [pack_event(ts, item, category_of[item], "pv") for ts, item in clicks]
    updates: list[FeatureUpdate] = [
        UserRecentEvents(user, clicks[n][0], events[: n + 1]) for user in OTHERS for n in range(3)
    ]
    updates.append(
        ItemWindow(UNSEEN, category[a], now - 30 * MINUTE, now, pv=3, cart=0, fav=0, buy=0)
    )
    updates.append(
        UserRecentEvents(NEW_USER, now - MINUTE, [pack_event(now - MINUTE, a, category[a], "pv")])
    )
    return updates, a, b, category[a]


def write_through_the_writer(
    kafka: KafkaSettings, redis_url: str, topic: str, project: str, updates: list[FeatureUpdate]
) -> None:
    producer = Producer(kafka.client_config())
    for update in updates:
        producer.produce(topic, msgspec.json.encode(update))
    assert producer.flush(10) == 0
    settings = WriterSettings(
        kafka=kafka, topic=topic, group_id=f"cv-{uuid.uuid4().hex[:8]}", redis_url=redis_url,
        project=project, batch_size=4, batch_timeout_s=0.2,
    )  # fmt: skip
    loop = build_loop(settings)
    try:
        stats = loop.run(max_records=len(updates), max_seconds=60)
    finally:
        loop.close()
    assert stats.records == len(updates) and stats.bad_rows == 0


def test_others_next_clicks_are_recalled_by_covisit_and_an_unseen_item_is_ranked(
    kafka: KafkaSettings,
    stack: Endpoints,
    topic_factory: TopicFactory,
    triton: TritonServer,
    world: World,
    redis_client: OnlineClient,
    tmp_path: Path,
) -> None:
    project = f"cv{uuid.uuid4().hex[:8]}"
    redis_url = requirements.redis_url(stack.redis_url)
    updates, a, b, category = changelog(world, wall_clock_ms())
    write_through_the_writer(kafka, redis_url, topic_factory(), project, updates)
    request = RecRequest(request_id="covisit", user_id=NEW_USER, ts=wall_clock_ms(), k=200)

    # The prepared batch: both come from the route; UNSEEN reaches the ranker as the OOV
    # index with the category of its trends row.
    reader = FeatureReader(redis_client, project, inventory_key(project))
    preparer = BatchPreparer(WorkerSettings(project=project), world.artifacts, reader,
                             WorkerMetrics())  # fmt: skip
    [prepared] = preparer.prepare([request]).requests
    assert prepared.reasons == []
    assert {Candidate(b, "covisit"), Candidate(UNSEEN, "covisit")} <= set(prepared.candidates)
    at = [c.item_id for c in prepared.candidates].index(UNSEEN)
    assert prepared.model_input.cand_items[at] == OOV_INDEX
    assert prepared.categories[at] == category

    # The worker's answer: both recommended by covisit with the served model's scores.
    # A worker of its own: the shared ones read the session's world project.
    topics = WorkerTopics.create(kafka)
    # Viewed items excluded (the default keeps them): the clicked item must not come back.
    env = worker_env(kafka, redis_url, project, world.model_dir, topics,
                     (triton.grpc_url, triton.model), triton_timeout_ms="20000",
                     exclude_behaviors="pv,buy")  # fmt: skip
    worker = WorkerProcess(env, tmp_path / "worker.log")
    output = OutputReader(kafka, topics.output)
    try:
        rec = ask(kafka, topics, output, [request])["covisit"]
    finally:
        output.close()
        worker.close()
    assert not rec.degraded, (rec.degraded_reasons, worker.output()[-3000:])
    assert rec.model_version.startswith(triton.model)
    routes = {item.item_id: item.route for item in rec.items}
    assert routes.get(b) == "covisit" and routes.get(UNSEEN) == "covisit", rec.items
    assert a not in routes  # just viewed: dropped, as this worker was told
    [unseen] = [item for item in rec.items if item.item_id == UNSEEN]
    assert isinstance(unseen.score, float)
