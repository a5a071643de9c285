"""Bad input on a real broker: each kind lands in the dead-letter topic and the consumer goes on."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer

from jobs.replay.readback import high_watermarks, read_range
from runtime.consumer import RecordConsumer
from runtime.kafka import KafkaSettings, dead_letter_spec, ensure_topics
from schemas.codec import dead_letter_codec, event_codec, wall_clock_ms
from schemas.records import BehaviorEvent
from schemas.topics import dead_letter_topic
from tests.conftest import TopicFactory

pytestmark = pytest.mark.integration

GOOD = {"user_id": 1, "item_id": 2, "category_id": 3, "behavior": "pv", "ts": 1511544070000}
BAD_INPUTS = {
    "malformed": b'{"user_id": 1, "item_id": 2,',
    "wrong type": json.dumps({**GOOD, "item_id": "two"}).encode(),
    "missing field": json.dumps({k: v for k, v in GOOD.items() if k != "behavior"}).encode(),
    "unknown behaviour": json.dumps({**GOOD, "behavior": "like"}).encode(),
    "oversized": json.dumps({**GOOD, "note": "x" * 5000}).encode(),
    "absurd future": json.dumps({**GOOD, "ts": wall_clock_ms() + 365 * 86_400_000}).encode(),
    "seconds not ms": json.dumps({**GOOD, "ts": 1511544070}).encode(),
}
EXPECTED_KIND = {
    "malformed": "malformed", "wrong type": "schema", "missing field": "schema",
    "unknown behaviour": "schema", "oversized": "oversized", "absurd future": "timestamp",
    "seconds not ms": "schema",
}  # fmt: skip


def good(n: int) -> bytes:
    return json.dumps({**GOOD, "item_id": n}).encode()


def drain(consumer: RecordConsumer[BehaviorEvent], want: int) -> list[BehaviorEvent]:
    records: list[BehaviorEvent] = []
    for _ in range(60):
        records += [record for _, record in consumer.poll_batch(timeout_s=0.5)]
        if len(records) >= want:
            break
    consumer.commit()
    return records


def test_each_bad_input_is_dead_lettered_with_reason_and_bytes(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=1)
    ensure_topics(kafka, [dead_letter_spec(dead_letter_topic(topic))])
    producer = Producer(kafka.client_config())
    for n, payload in enumerate(BAD_INPUTS.values(), start=100):
        producer.produce(topic, good(n), key=b"1")
        producer.produce(topic, payload, key=b"1")
    producer.flush(10)

    consumer = RecordConsumer(kafka, [topic], f"g-{uuid.uuid4().hex}", event_codec())
    try:
        assert [r.item_id for r in drain(consumer, len(BAD_INPUTS))] == list(
            range(100, 100 + len(BAD_INPUTS))
        )
        # The consumer keeps going after the bad records.
        producer.produce(topic, good(999), key=b"1")
        producer.flush(10)
        assert [r.item_id for r in drain(consumer, 1)] == [999]
    finally:
        consumer.close()

    dlq = dead_letter_topic(topic)
    letters = [
        dead_letter_codec().decode(m.value())
        for m in read_range(kafka, dlq, {}, high_watermarks(kafka, dlq))
    ]
    assert [letter.original for letter in letters] == list(BAD_INPUTS.values())
    for name, letter in zip(BAD_INPUTS, letters, strict=True):
        assert letter.error_kind == EXPECTED_KIND[name], (name, letter.error)
        assert letter.error, name
        assert (letter.source_topic, letter.source_partition) == (topic, 0)
        assert letter.original_size == len(BAD_INPUTS[name])
    assert [letter.source_offset for letter in letters] == list(range(1, 2 * len(letters), 2))


def test_committed_offsets_survive_a_restart(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=2)
    group = f"g-{uuid.uuid4().hex}"
    producer = Producer(kafka.client_config())
    for n in range(1, 21):
        producer.produce(topic, good(n), key=str(n % 5).encode())
    producer.flush(10)
    first = RecordConsumer(kafka, [topic], group, event_codec())
    seen = drain(first, 20)
    first.close()
    for n in range(21, 26):
        producer.produce(topic, good(n), key=str(n % 5).encode())
    producer.flush(10)
    second = RecordConsumer(kafka, [topic], group, event_codec())
    try:
        rest = drain(second, 5)
    finally:
        second.close()
    assert sorted(r.item_id for r in seen) == list(range(1, 21))
    assert sorted(r.item_id for r in rest) == list(range(21, 26))


def test_a_committed_snapshot_leaves_what_was_polled_after_it(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=1)
    ensure_topics(kafka, [dead_letter_spec(dead_letter_topic(topic))])
    group = f"g-{uuid.uuid4().hex}"
    producer = Producer(kafka.client_config())
    for n in range(1, 5):
        producer.produce(topic, good(n))
    producer.produce(topic, BAD_INPUTS["malformed"])  # offset 4: the snapshot's last record
    for n in range(6, 11):
        producer.produce(topic, good(n))
    producer.flush(10)
    first = RecordConsumer(kafka, [topic], group, event_codec())
    polled: list[int] = []
    while len(polled) < 4:
        polled += [record.item_id for _, record in first.poll_batch(5 - len(polled), 1.0)]
    snapshot = first.consumed_offsets()
    assert snapshot == {(topic, 0): 5}
    later = drain(first, 5)  # polled, and committed by drain's commit() ...
    assert [record.item_id for record in later] == [6, 7, 8, 9, 10]
    first.commit(snapshot)  # ... then the snapshot committed over it
    first.close()
    second = RecordConsumer(kafka, [topic], group, event_codec())
    try:
        again = drain(second, 5)
    finally:
        second.close()
    assert [record.item_id for record in again] == [6, 7, 8, 9, 10]
    assert second.dead_letters.counts == {}  # the bad record is behind the snapshot
