"""Exporting the events topic over a time window, on a real broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from jobs.datasets import RowAudit, read_dataset
from jobs.retrain.export import export_window
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.records import BehaviorEvent
from tests.conftest import TopicFactory

pytestmark = pytest.mark.integration
T0 = 1_700_000_000_000


def test_the_window_is_exported_record_for_record_and_reads_back(
    kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=3)
    codec = event_codec()
    producer = Producer(kafka.client_config())
    sent = []
    for n in range(300):
        event = BehaviorEvent(1 + n % 7, 100 + n, 9, "pv", T0 + n * 1000)
        raw = codec.encode(event)
        producer.produce(topic, raw, key=str(event.user_id).encode(), timestamp=event.ts)
        sent.append(event)
    # Pretty-printed JSON (line breaks are whitespace) and a record that is no event.
    pretty = b'{\n "user_id": 1, "item_id": 2, "category_id": 3,\n "behavior": "buy",\n'
    producer.produce(topic, pretty + b' "ts": 1700000299500}', timestamp=T0 + 299_500)
    producer.produce(topic, b"not json", timestamp=T0 + 299_600)
    assert producer.flush(30) == 0

    exported = export_window(kafka, topic, T0 + 100_000, tmp_path / "events.jsonl")
    assert exported.records == 200 + 2 and exported.partitions == 3
    audit = RowAudit()
    events = list(read_dataset("events", exported.path, audit))
    expected = {e for e in sent if e.ts >= T0 + 100_000} | {
        BehaviorEvent(1, 2, 3, "buy", 1700000299500)
    }
    assert set(events) == expected
    assert audit.bad_rows == 1


def test_a_window_after_the_last_record_exports_nothing(
    kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=2)
    producer = Producer(kafka.client_config())
    producer.produce(topic, event_codec().encode(BehaviorEvent(1, 2, 3, "pv", T0)), timestamp=T0)
    assert producer.flush(30) == 0
    exported = export_window(kafka, topic, T0 + 1, tmp_path / "none.jsonl")
    assert exported.records == 0 and exported.path.read_bytes() == b""
