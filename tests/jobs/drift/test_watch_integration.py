"""The drift watch on real Kafka over the real Taobao stream's feature rows.

The unchanged stream must raise no alert against the reference built from the
same stream; each injected shift must flag exactly the columns it moves.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from confluent_kafka import Consumer, Producer

from jobs.drift.reference import save_reference
from runtime.kafka import KafkaSettings
from schemas.features import FeatureUpdate
from schemas.records import BehaviorEvent
from schemas.topics import dead_letter_topic
from tests.conftest import TopicFactory
from tests.jobs.drift.harness import run_watch_over, watch_settings
from tests.support.drift_shift import Shift, category_swap, shift_rows

pytestmark = pytest.mark.integration

# A mid-stream slice (about 10:00-10:10): whole windows, no start-up edge.
SLICE = slice(500_000, 560_000)
WINDOW_ROWS = 25_000


@pytest.fixture
def reference_path(stream_reference: pd.DataFrame, tmp_path: Path) -> Path:
    return save_reference(stream_reference, tmp_path / "model" / "drift_reference.parquet")


def test_unchanged_stream_raises_no_alert(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    reference_path: Path,
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    settings = watch_settings(
        kafka, topic_factory(4), reference_path, tmp_path / "reports", window_rows=WINDOW_ROWS
    )
    run = run_watch_over(settings, stream_changelog[SLICE])
    alerts = [result.alert for result, _ in run.checks]
    assert len(alerts) >= 2
    assert [a.status for a in alerts] == ["ok"] * len(alerts), [
        (f.feature, round(f.score, 3)) for a in alerts for f in a.features if f.drifted
    ]
    assert {a.check_id for a in run.published} == {a.check_id for a in alerts}
    assert run.published[0].reference_rows == 100_000
    assert "item_category" in {f.feature for f in alerts[0].features}
    status = run.loop.metrics.registry.get_sample_value
    assert status("streamrec_drift_status", {"status": "ok"}) == 1.0
    assert status("streamrec_drift_share") == 0.0


def test_injected_shift_flags_the_shifted_features_and_no_others(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    reference_path: Path,
    stream_events: list[BehaviorEvent],
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    shift = Shift()
    shifted = shift_rows(stream_changelog[SLICE], shift, category_swap(stream_events, 10))
    settings = watch_settings(
        kafka, topic_factory(4), reference_path, tmp_path / "reports", window_rows=WINDOW_ROWS
    )
    run = run_watch_over(settings, shifted)
    full = [result.alert for result, _ in run.checks if result.alert.rows >= WINDOW_ROWS]
    assert full
    for alert in full:
        assert alert.status == "drift"
        flagged = {f.feature for f in alert.features if f.drifted}
        assert flagged == set(shift.columns), [
            (f.feature, round(f.score, 3)) for f in alert.features
        ]
    gauge = run.loop.metrics.registry.get_sample_value
    assert gauge("streamrec_drift_feature_drifted", {"feature": "item_category"}) == 1.0
    assert gauge("streamrec_drift_feature_drifted", {"feature": "user_conversion"}) == 0.0


def test_too_few_rows_is_insufficient_data_not_a_guess(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    reference_path: Path,
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    settings = watch_settings(kafka, topic_factory(1), reference_path, reports, min_rows=1000)
    run = run_watch_over(settings, stream_changelog[SLICE][:300], idle_seconds=3.0)
    assert [(r.alert.status, r.alert.features, path) for r, path in run.checks] == [
        ("insufficient_data", [], None)
    ]
    assert [a.status for a in run.published] == ["insufficient_data"]
    assert not reports.exists() or not list(reports.iterdir())


def test_reports_are_written_and_only_the_latest_kept(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    reference_path: Path,
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    settings = watch_settings(
        kafka, topic_factory(1), reference_path, reports, window_rows=4000, keep_reports=2
    )
    run = run_watch_over(settings, stream_changelog[SLICE][:16_000])
    written = [path for _, path in run.checks if path is not None]
    assert len(written) >= 4
    kept = sorted(p.name for p in reports.iterdir())
    assert kept == sorted(
        [f"{p.stem}.html" for p in written[-2:]] + [f"{p.stem}.json" for p in written[-2:]]
    )
    assert "user_seq_length" in written[-1].read_text(encoding="utf-8")


def test_malformed_changelog_record_goes_to_the_dead_letter_topic(
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    reference_path: Path,
    stream_changelog: list[FeatureUpdate],
    tmp_path: Path,
) -> None:
    topic = topic_factory(1)
    producer = Producer(kafka.client_config())
    producer.produce(topic, b'{"view": "user_window", "user_id": -1}')
    producer.flush(10)
    settings = watch_settings(kafka, topic, reference_path, tmp_path / "r", min_rows=100)
    run = run_watch_over(settings, stream_changelog[SLICE][:2000], idle_seconds=3.0)
    assert [r.alert.rows for r, _ in run.checks] == [2000]
    assert run.loop.metrics.registry.get_sample_value("streamrec_drift_dead_letters_total") == 1.0
    consumer = Consumer(kafka.client_config(group_id="dlq-read", auto_offset_reset="earliest"))
    consumer.subscribe([dead_letter_topic(topic)])
    messages = []
    for _ in range(40):
        messages += [m for m in consumer.consume(10, timeout=0.5) if m.error() is None]
        if messages:
            break
    consumer.close()
    assert len(messages) == 1 and b"user_id" in (messages[0].value() or b"")
