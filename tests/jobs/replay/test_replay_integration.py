"""The replay path on a real broker with the real data files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.datasets import RowAudit, read_dataset
from jobs.replay.cli import main
from jobs.replay.producer import KeyedProducer
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from jobs.replay.verify import Consumed, compare
from runtime.kafka import LOG_APPEND_TIME, KafkaSettings
from schemas.codec import event_codec, request_codec
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


def test_paced_requests_are_appended_when_due_from_the_first(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    # A fresh idempotent producer held its first records 500 ms for its producer id, so
    # the replay's first half second of requests reached the broker at once (and a worker
    # then answered a burst). On a LogAppendTime topic each request's append time, less
    # when it was due after the stream's start, is the same for all when none waited.
    topic = topic_factory(partitions=2)
    requests = topic_factory(partitions=2, suffix="-req", config=LOG_APPEND_TIME)
    # A broker that has never given out a producer id refuses the first ask while it
    # fetches a block of ids from its controller (the same 500 ms, from the broker):
    # the test's broker may be new, a deployment's is not.
    warm = KeyedProducer(kafka)
    warm.send(topic_factory(suffix="-warm"), b"warm-up", b"not an event")
    assert warm.flush().delivered == 1
    speed = 20.0  # the first 150 events span about 11 s of event time: about 0.55 s here
    options = ReplayOptions(
        topic=topic, request_topic=requests, request_rate=0.5, speed=speed, limit=150
    )
    run_replay(options, kafka)

    codec = request_codec()
    appended = [
        (codec.decode(m.value()).ts, m.timestamp()[1])
        for m in read_range(kafka, requests, {}, high_watermarks(kafka, requests))
    ]
    assert len(appended) > 50
    first_ts = min(ts for ts, _ in appended)
    late_ms = [at_ms - (ts - first_ts) / speed for ts, at_ms in appended]
    assert max(late_ms) - min(late_ms) < 300, sorted(late_ms)


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
