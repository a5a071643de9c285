"""The outcome job on a real broker: recommendations and later events in, hit counts out."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Producer

from jobs.outcomes.loop import OutcomeLoop
from jobs.outcomes.metrics import OutcomeMetrics
from jobs.outcomes.settings import OutcomeSettings
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec, recommendation_codec
from schemas.records import BehaviorEvent, RecItem, Recommendation
from tests.conftest import TopicFactory

pytestmark = pytest.mark.integration
T0 = 1_700_000_000_000
MIN = 60_000


def test_hit_rate_per_variant_from_the_two_topics(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    # One events partition: the event that closes every horizon must come after the clicks
    # (across partitions only ``lateness`` of disorder is absorbed, as in production).
    recs_topic, events_topic = topic_factory(partitions=2), topic_factory(partitions=1)
    producer = Producer(kafka.client_config())
    for user in range(1, 21):
        variant = "canary" if user % 2 else "champion"
        registered = f"streamrec-ranker/{user % 2}"
        items = [RecItem(100 + user, 0.4, "trend")]
        rec = Recommendation(f"r{user}", user, items, "m:2", None, T0, variant=variant,
                             registry_version=registered)  # fmt: skip
        producer.produce(recs_topic, recommendation_codec().encode(rec), key=str(user).encode())
    assert producer.flush(30) == 0
    # Users 1-5 click their item within the horizon; the rest never do.
    events = [BehaviorEvent(u, 100 + u, 1, "pv", T0 + 2 * MIN) for u in range(1, 6)]
    # Time just past every horizon plus the lateness (90 min), the clicks still within it.
    events.append(BehaviorEvent(99, 1, 1, "pv", T0 + 91 * MIN))
    for event in events:
        producer.produce(events_topic, event_codec().encode(event), key=str(event.user_id).encode())
    producer.produce(events_topic, b"not an event")
    assert producer.flush(30) == 0

    settings = OutcomeSettings(
        kafka=kafka, recommendations_topic=recs_topic, events_topic=events_topic,
        group_id=f"g-{recs_topic}", metrics_port=0,
        # The topics are read in no set order: either may come first by minutes here.
        lateness_seconds=3600,
    )  # fmt: skip
    metrics = OutcomeMetrics()
    OutcomeLoop(settings, metrics).run(threading.Event(), idle_seconds=5.0)
    value = metrics.registry.get_sample_value

    def judged(variant: str) -> float:
        labels = {
            "variant": variant,
            "registry_version": f"streamrec-ranker/{variant == 'canary':d}",
        }
        return value("streamrec_outcome_judged_total", labels) or 0.0

    assert judged("canary") == 10 and judged("champion") == 10
    canary_hits = value(
        "streamrec_outcome_hits_total",
        {"variant": "canary", "registry_version": "streamrec-ranker/1", "behavior": "pv"},
    )
    assert canary_hits == 3  # users 1, 3, 5
    assert value("streamrec_outcome_skipped_total", {"topic": events_topic}) == 1
