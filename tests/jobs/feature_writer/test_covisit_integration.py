"""Co-visitation counts on real Kafka and Redis: through the writer, once each, bounded."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from confluent_kafka import Producer

from jobs.feature_writer.cli import build_loop
from jobs.feature_writer.covisit import CovisitOptions, count_calls
from jobs.feature_writer.settings import WriterSettings
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient, connect
from runtime.online.redis_store import OnlineStoreWriter, read_neighbours
from schemas.features import FeatureUpdate, UserRecentEvents, pack_event
from schemas.online.covisit import Visit, neighbours_key, seen_key
from schemas.online.history import (
    History,
    Touched,
    decode_history,
    history_keys,
    queue_history_reads,
)
from tests.conftest import Endpoints, RedisClusterStack, TopicFactory
from tests.jobs.feature_writer.samples import MINUTE, T0
from tests.support import requirements

pytestmark = pytest.mark.integration
A, B, C, D = 11, 12, 13, 14


@pytest.fixture(params=["one-redis", "redis-cluster"])
def store_url(request: pytest.FixtureRequest, stack: Endpoints) -> str:
    """Both kinds of store: one Redis counts in one script, a cluster in guarded calls."""
    if request.param == "redis-cluster":
        cluster: RedisClusterStack = request.getfixturevalue("redis_cluster")
        return cluster.url
    return requirements.redis_url(stack.redis_url)


@pytest.fixture
def client(store_url: str) -> Iterator[OnlineClient]:
    client = connect(store_url)
    yield client
    client.close()


def session(user_id: int, clicks: list[tuple[int, int]]) -> list[UserRecentEvents]:
    """The fresh rows the feature job emits for ``(minute, item)`` clicks: one per click."""
    events = [pack_event(T0 + minute * MINUTE, item, 1, "pv") for minute, item in clicks]
    return [
        UserRecentEvents(user_id, T0 + clicks[n][0] * MINUTE, events[: n + 1])
        for n in range(len(clicks))
    ]


def run_writer(kafka: KafkaSettings, redis_url: str, topic: str, project: str, n: int) -> int:
    """A writer with a group of its own reads the whole topic; returns the visits counted."""
    settings = WriterSettings(
        kafka=kafka, topic=topic, group_id=f"cv-{uuid.uuid4().hex[:8]}", redis_url=redis_url,
        project=project, batch_size=3, batch_timeout_s=0.2,
    )  # fmt: skip
    loop = build_loop(settings)
    try:
        stats = loop.run(max_records=n, max_seconds=60)
    finally:
        loop.close()
    assert stats.records == n
    return stats.covisits


def neighbours(client: OnlineClient, items: list[int], project: str) -> dict[int, Any]:
    return dict(zip(items, read_neighbours(client, items, 10, project), strict=True))


def test_stream_counts_each_pair_once_both_ways_even_when_replayed(
    kafka: KafkaSettings, store_url: str, topic_factory: TopicFactory, client: OnlineClient
) -> None:
    topic, project = topic_factory(partitions=2), f"cv{uuid.uuid4().hex[:8]}"
    updates: list[FeatureUpdate] = []
    for user in (1, 2, 3):
        updates += session(user, [(0, A), (5, B)])
    updates += session(4, [(0, A), (10, C), (12, A)])  # A again: pairs with C, not itself
    updates += session(5, [(0, A), (31, D)])  # 31 minutes apart: not co-visited
    producer = Producer(kafka.client_config())
    for update in updates:
        key = f"user_recent:{update.user_id}".encode()  # type: ignore[union-attr]
        producer.produce(topic, msgspec.json.encode(update), key=key)
    assert producer.flush(10) == 0
    redis_url = store_url

    assert run_writer(kafka, redis_url, topic, project, len(updates)) == len(updates)
    expected = {
        A: [(B, 3.0), (C, 2.0)],
        B: [(A, 3.0)],
        C: [(A, 2.0)],
        D: [],
    }
    assert neighbours(client, list(expected), project) == expected

    # A replay (a crash before the commit, a feature job restored from a checkpoint)
    # brings the same rows again: nothing is counted twice.
    assert run_writer(kafka, redis_url, topic, project, len(updates)) == 0
    assert neighbours(client, list(expected), project) == expected
    remaining_ms: int = client.pttl(seen_key(1, project))  # type: ignore[assignment]
    assert 0 < remaining_ms <= 2 * 30 * MINUTE


def test_sets_keep_their_top_neighbours_with_a_ttl_and_survive_a_script_flush(
    client: OnlineClient,
) -> None:
    project = f"cv{uuid.uuid4().hex[:8]}"
    options = CovisitOptions(project=project, neighbours=2, ttl_s=600)
    writer = OnlineStoreWriter(client, project)
    visits = [
        (1, Visit(T0, A, (B, C, D))),
        (2, Visit(T0, A, (B, C))),
        (3, Visit(T0, A, (B,))),
    ]
    result = writer.write([], count_calls(visits, options, cluster=writer.is_cluster))
    assert result.also == (3,)
    # A: B 3, C 2, D 1 -> D is cut; D's own set keeps A.
    assert read_neighbours(client, [A, D], 10, project) == [[(B, 3.0), (C, 2.0)], [(A, 1.0)]]
    remaining_s: int = client.ttl(neighbours_key(A, project))  # type: ignore[assignment]
    assert 0 < remaining_s <= 600
    # Redis lost its scripts (a restart): the pipeline is sent again, still counted once.
    client.script_flush()
    later = [(1, Visit(T0 + 1, D, (A,)))]
    again = writer.write([], count_calls(later, options, cluster=writer.is_cluster))
    assert again.also == (1,)
    assert read_neighbours(client, [A, D], 10, project) == [[(B, 3.0), (C, 2.0)], [(A, 2.0)]]


def read_history(client: OnlineClient, user_id: int, project: str) -> History:
    pipe = client.pipeline()
    queue_history_reads(pipe, [user_id], project)
    times, counts = pipe.execute()
    return decode_history(times, counts)


def test_history_keeps_each_item_last_touch_and_count_once_per_visit_bounded_with_a_ttl(
    client: OnlineClient,
) -> None:
    project = f"cv{uuid.uuid4().hex[:8]}"
    options = CovisitOptions(project=project, history_items=2, history_ttl_s=600)
    writer = OnlineStoreWriter(client, project)
    visits = [
        (1, Visit(T0, A, ())),
        (1, Visit(T0 + 1, B, (A,))),
        (1, Visit(T0 + 2, A, (B,))),
        (1, Visit(T0 + 2, A, (B,))),  # a replayed row: not newer than the guard
    ]
    result = writer.write([], count_calls(visits, options, cluster=writer.is_cluster))
    assert result.also == (3,)
    assert read_history(client, 1, project) == [Touched(A, T0 + 2, 2), Touched(B, T0 + 1, 1)]
    # A third item pushes the oldest (B) out of both sets; A's count stays.
    later = [(1, Visit(T0 + 3, C, (A,)))]
    writer.write([], count_calls(later, options, cluster=writer.is_cluster))
    assert read_history(client, 1, project) == [Touched(C, T0 + 3, 1), Touched(A, T0 + 2, 2)]
    for key in history_keys(1, project):
        remaining_s: int = client.ttl(key)  # type: ignore[assignment]
        assert 0 < remaining_s <= 600
