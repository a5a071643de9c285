"""End to end on real Kafka and Redis: changelog in, Feast reads out, bad records dead-lettered,
and /metrics says what the loop counted."""

from __future__ import annotations

import urllib.request
import uuid

import msgspec
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from jobs.feature_writer.cli import build_loop
from jobs.feature_writer.loop import WriterStats
from jobs.feature_writer.metrics import STAT_COUNTERS, serve
from jobs.feature_writer.rows import ConversionOptions, to_row
from jobs.feature_writer.settings import WriterSettings
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from schemas.codec import dead_letter_codec
from schemas.features import FeatureUpdate, UserRecentEvents
from schemas.topics import dead_letter_topic
from tests.conftest import TopicFactory, free_port
from tests.feature_repo.applied import AppliedRepo
from tests.jobs.feature_writer.samples import (
    MINUTE,
    T0,
    category_window,
    item_window,
    recent,
    user_window,
)
from tests.jobs.feature_writer.test_feast_roundtrip_integration import feast_read, fresh_id

pytestmark = pytest.mark.integration

MALFORMED = b'{"view": "user_recent", "user_id": '
UNCONVERTIBLE = msgspec.json.encode(
    UserRecentEvents(user_id=5, latest_ts=T0, events=[f"{T0}:x:1:pv"])
)


def committed(kafka: KafkaSettings, group: str, topic: str) -> int:
    consumer = Consumer(kafka.client_config(**{"group.id": group}))
    try:
        [partition] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(partition.offset)
    finally:
        consumer.close()


def scraped(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` on loopback ``port``, by name and sorted labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def assert_metrics_are_the_loops_counts(port: int, stats: WriterStats) -> None:
    samples = scraped(port)
    for field, (name, _help) in STAT_COUNTERS.items():
        assert samples[(name + "_total", ())] == getattr(stats, field), field
    assert samples[("streamrec_writer_rows_written_total", ())] == stats.written > 0
    dead = {labels[0][1]: n for (name, labels), n in samples.items()
            if name == "streamrec_writer_dead_letters_total"}  # fmt: skip
    assert dead == {"malformed": 1, "schema": 1, "oversized": 0, "timestamp": 0}
    assert samples[("streamrec_writer_batch_size_count", ())] == stats.batches
    assert samples[("streamrec_writer_newest_event_timestamp_seconds", ())] > T0 / 1000


def test_changelog_to_feast_reads_with_dead_letters(
    kafka: KafkaSettings, topic_factory: TopicFactory, feast_repo: AppliedRepo
) -> None:
    topic = topic_factory(partitions=1)
    user, other, item, category = fresh_id(), fresh_id(), fresh_id(), fresh_id()
    updates: list[FeatureUpdate] = [
        *(recent(user_id=user, latest_ts=T0 + i * MINUTE, n=i + 1) for i in range(5)),
        recent(user_id=other, n=2),
        user_window(user_id=user),
        item_window(item_id=item),
        category_window(category_id=category),
    ]
    producer = Producer(kafka.client_config())
    for update in updates[:3]:
        producer.produce(topic, msgspec.json.encode(update))
    producer.produce(topic, MALFORMED)
    producer.produce(topic, UNCONVERTIBLE)
    for update in updates[3:]:
        producer.produce(topic, msgspec.json.encode(update))
    producer.flush(10)

    group = f"fw-{uuid.uuid4().hex[:8]}"
    settings = WriterSettings(
        kafka=kafka, topic=topic, group_id=group, redis_url=feast_repo.redis_url,
        project=feast_repo.project, batch_size=4, batch_timeout_s=0.2,
    )  # fmt: skip
    loop = build_loop(settings)
    port = free_port()
    server = serve(loop.metrics, port)
    assert server is not None
    try:
        stats = loop.run(max_records=len(updates) + 1, max_seconds=60)
        assert_metrics_are_the_loops_counts(port, stats)
    finally:
        loop.close()
        server.shutdown()
        server.server_close()

    assert stats.records == len(updates) + 1  # the unconvertible one decodes
    assert stats.bad_rows == 1
    options = ConversionOptions()
    for update in (updates[4], *updates[5:]):
        row = to_row(update, options)
        assert feast_read(feast_repo, row.view.name, [row.entity_id]) == [row.decoded()]
    assert committed(kafka, group, topic) == len(updates) + 2

    dlq = dead_letter_topic(topic)
    letters = [
        dead_letter_codec().decode(m.value())
        for m in read_range(kafka, dlq, {}, high_watermarks(kafka, dlq))
    ]
    assert [(letter.original, letter.error_kind) for letter in letters] == [
        (MALFORMED, "malformed"),
        (UNCONVERTIBLE, "schema"),
    ]
    assert [letter.source_offset for letter in letters] == [3, 4]
