"""The real Taobao stream as feature changelog rows, and a producer for them.

Changelog rows come from the feature job's pure-Python reference over the
stream rather than from Flink: the job equals the reference row for row
(tests/jobs/features), and this takes seconds instead of a cluster run.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.features import FeatureUpdate


def changelog_key(row: FeatureUpdate) -> bytes:
    """The entity the job keys a row by (user, item or category)."""
    entity = getattr(row, "user_id", None) or getattr(row, "item_id", None) or row.category_id  # type: ignore[union-attr]
    return str(entity).encode()


def produce_changelog(kafka: KafkaSettings, topic: str, rows: Sequence[FeatureUpdate]) -> None:
    """Produce ``rows`` in order and wait until every one is acknowledged."""
    producer = Producer(kafka.client_config(linger_ms=20, compression_type="lz4"))
    encoder = msgspec.json.Encoder()
    for row in rows:
        while True:
            try:
                producer.produce(topic, encoder.encode(row), key=changelog_key(row))
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(60.0):
        raise RuntimeError(f"changelog rows for {topic} not delivered")
