"""The replay path on a real broker with the real data files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.datasets import RowAudit, read_dataset
from jobs.replay.cli import main
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from jobs.replay.verify import Consumed, compare
from schemas.codec import event_codec, request_codec
from schemas.kafka import KafkaSettings
from tests.conftest import TopicFactory
from tests.support import requirements

pytestmark = pytest.mark.integration


def read_events(kafka: KafkaSettings, topic: str) -> list[Consumed]:
    """Every event of the topic, checking on the way that it is keyed by its user."""
    codec = event_codec()
    consumed = []
    for message in read_range(kafka, topic, {}, high_watermarks(kafka, topic)):
        event = codec.decode(message.value())
        assert message.key() == str(event.user_id).encode()
        consumed.append(Consumed(message.partition(), message.offset(), event))
    return consumed


def test_whole_taobao_stream_round_trips_exactly(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topic, requests = topic_factory(partitions=4), topic_factory(partitions=4, suffix="-req")
    options = ReplayOptions(topic=topic, request_topic=requests, request_rate=0.05)
    summary = run_replay(options, kafka)
    assert (summary.events, summary.delivery.failed, summary.ok) == (110_300, 0, True)

    source = list(read_dataset("taobao", None, RowAudit()))
    received = read_events(kafka, topic)
    trip = compare(source, received)
    # Multiset equality: each record equals one source row, none lost or repeated.
    assert trip.exact, trip

    request_codec_ = request_codec()
    derived = [
        request_codec_.decode(m.value())
        for m in read_range(kafka, requests, {}, high_watermarks(kafka, requests))
    ]
    assert len(derived) == summary.requests > 5000
    assert len({r.request_id for r in derived}) == len(derived)


def test_several_partitions_keep_per_user_order(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    # 294 users with about a hundred events each, interleaved by time over 6 partitions.
    topic = topic_factory(partitions=6)
    options = ReplayOptions(dataset="taobao-9days", topic=topic, sort_by_time=True)
    summary = run_replay(options, kafka)
    source = sorted(read_dataset("taobao-9days", None, RowAudit()), key=lambda e: e.ts)
    received = read_events(kafka, topic)
    assert summary.events == len(source) == 30_959
    trip = compare(source, received)
    assert trip.exact, trip
    assert len({c.partition for c in received}) == 6


def test_cli_counts_bad_rows_and_writes_a_summary(
    kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=2)
    lines = requirements.dataset("taobao").read_text().splitlines()[:200]
    lines[10] = "not,a,row"
    lines[20] = lines[20].replace(",pv,", ",click,")
    data = tmp_path / "with-bad-rows.csv"
    data.write_text("\n".join(lines) + "\n")
    summary_file = tmp_path / "summary.json"
    code = main(
        [
            "--file",
            str(data),
            "--topic",
            topic,
            "--request-topic",
            topic + "-req",
            "--bootstrap-servers",
            kafka.bootstrap_servers,
            "--no-progress",
            "--summary-json",
            str(summary_file),
            "--speed",
            "600",
        ]
    )
    summary = json.loads(summary_file.read_text())
    assert code == 0
    assert (summary["rows"], summary["events"], summary["delivered"]) == (200, 198, 198)
    assert sum(summary["bad_rows"].values()) == 2
    assert len(read_events(kafka, topic)) == 198
