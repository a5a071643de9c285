"""Behaviour events onto a topic, each record timed by its event (as producers do)."""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.records import BehaviorEvent


def produce_timed(kafka: KafkaSettings, topic: str, events: Sequence[BehaviorEvent]) -> None:
    """Keyed by user, the record timestamp the event's own (the retraining export reads it)."""
    producer = Producer(kafka.client_config(**{"linger.ms": 20}))
    codec = event_codec()
    for n, event in enumerate(events):
        producer.produce(topic, codec.encode(event), key=str(event.user_id).encode(),
                         timestamp=event.ts)  # fmt: skip
        if n % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"events not all delivered to {topic}")
