"""Score drift on real Kafka: the first recommendations are the baseline, later ones judged."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pandas as pd
import pytest
from confluent_kafka import Producer

from jobs.drift.cli import build_loop
from jobs.drift.reference import save_reference
from jobs.drift.scores import BASELINE_FILE
from runtime.kafka import KafkaSettings
from schemas.codec import recommendation_codec
from schemas.records import RecItem, Recommendation
from tests.conftest import TopicFactory
from tests.jobs.drift.harness import watch_settings

pytestmark = pytest.mark.integration
BASELINE, WINDOW = 1000, 3000


def recommendations(count: int, shift: float, seed: int) -> list[Recommendation]:
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    return [
        Recommendation(
            request_id=f"r{seed}-{n}",
            user_id=n + 1,
            items=[
                RecItem(i + 1, rng.betavariate(2, 5) + shift, "embedding")
                for i in range(rng.randint(5, 10))
            ],
            model_version="v1",
            features_at=None,
            produced_at=now,
        )
        for n in range(count)
    ]


def test_scores_are_judged_against_the_first_recommendations(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    stream_reference: pd.DataFrame,
    tmp_path: Path,
) -> None:
    reference = save_reference(stream_reference, tmp_path / "model" / "drift_reference.parquet")
    scores_topic = topic_factory(1)
    settings = watch_settings(
        kafka,
        topic_factory(1),
        reference,
        tmp_path / "reports",
        recommendations_topic=scores_topic,
        window_rows=WINDOW,
        score_baseline_rows=BASELINE,
    )
    producer = Producer(kafka.client_config())
    codec = recommendation_codec()
    batches = [
        recommendations(BASELINE, 0.0, 1),
        recommendations(WINDOW, 0.0, 2),
        recommendations(WINDOW, 0.3, 3),
    ]
    for record in (r for batch in batches for r in batch):
        producer.produce(scores_topic, codec.encode(record))
        producer.poll(0)
    producer.flush(30)

    checks = []
    loop = build_loop(settings, on_check=lambda result, _path: checks.append(result.alert))
    try:
        loop.run(idle_seconds=4.0)
    finally:
        loop.close()

    assert (tmp_path / "reports" / BASELINE_FILE).exists()
    assert [alert.rows for alert in checks] == [WINDOW, WINDOW]
    same, shifted = ({f.feature: f.drifted for f in alert.features} for alert in checks)
    assert same == {"rec_top_score": False, "rec_mean_score": False, "rec_items": False}
    assert shifted == {"rec_top_score": True, "rec_mean_score": True, "rec_items": False}
