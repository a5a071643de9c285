"""The local run's Flink metrics, scraped over HTTP as Prometheus does, count each event once.

The dashboard's expressions (docs/operations.md, "Metrics") rest on what this reads: the
source operator's counters see each event once, where a sum over every task sees it
once per task it passes; the changelog writers' counters equal the rows on the topic.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from runtime.kafka import KafkaSettings
from schemas.records import BEHAVIORS, BehaviorEvent
from tests.conftest import TopicFactory, free_port
from tests.docker.metric_names import FLINK_METRICS
from tests.jobs.features import harness
from tests.jobs.features.test_job_integration import produce, topics_for
from tests.schemas.test_reference import MIN, T
from tests.security.listeners import descendants, exposed, listeners_of

pytestmark = pytest.mark.integration

# Six users over half an hour, one event a minute: the fresh view writes a row for each,
# and the watermark passes some window ends, so the windowed views write too.
EVENTS = [
    BehaviorEvent(1 + i % 6, 10 + i % 4, 100 + i % 2, BEHAVIORS[i % 4], T + i * MIN)
    for i in range(30)
]
OPERATOR = "flink_taskmanager_job_task_operator_"
Labels = dict[str, str]
Samples = dict[str, list[tuple[Labels, float]]]


def scrape(port: int) -> Samples:
    """Every sample on the reporter's /metrics, by name; empty while nothing answers."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def total(samples: Samples, name: str, where: Callable[[Labels], bool]) -> float:
    return sum(value for labels, value in samples.get(name, []) if where(labels))


# docs/operations.md's PromQL label filters (PromQL anchors a regex at both ends, as fullmatch).
SOURCE = r"Source:.*"
CHANGELOG_WRITER = r".+_sink_[0-9]+_:_Writer"
DEAD_LETTER_WRITER = r"dead_letter_sink_.*"


def is_source(labels: Labels) -> bool:
    return re.fullmatch(SOURCE, labels.get("operator_name", "")) is not None


def is_changelog_writer(labels: Labels) -> bool:
    name = labels.get("operator_name", "")
    return bool(re.fullmatch(CHANGELOG_WRITER, name)) and not re.fullmatch(DEAD_LETTER_WRITER, name)


def settled(samples: Samples, changelog_rows: int) -> bool:
    """Every event read and every row the writers sent on the topic."""
    events_in = total(samples, OPERATOR + "numRecordsIn", is_source)
    rows_out = total(samples, OPERATOR + "numRecordsSend", is_changelog_writer)
    return events_in == len(EVENTS) and rows_out == changelog_rows > len(EVENTS)


def test_the_local_run_serves_metrics_on_loopback_counting_each_event_once(
    kafka: KafkaSettings, topic_factory: TopicFactory
) -> None:
    topics = topics_for(topic_factory, partitions=2)
    produce(kafka, topics.source, EVENTS)
    port = free_port()
    job = harness.start(kafka, topics, ["--metrics-port", str(port)])
    try:
        deadline, samples, rows = time.monotonic() + 180, {}, 0
        while time.monotonic() < deadline:
            samples = scrape(port)
            rows = len(harness.read_all(kafka, topics.changelog))
            if settled(samples, rows):
                break
            assert job.poll() is None, job.stderr.read() if job.stderr else ""
            time.sleep(1)
        listening = listeners_of(descendants([job.pid]))
    finally:
        harness.kill(job)

    assert total(samples, OPERATOR + "numRecordsIn", is_source) == len(EVENTS)
    assert total(samples, OPERATOR + "numRecordsOut", is_source) == len(EVENTS)
    # What the dashboard summed: every task that an event passes counts it again.
    assert total(samples, "flink_taskmanager_job_task_numRecordsIn", bool) > len(EVENTS)
    assert total(samples, OPERATOR + "numRecordsSend", is_changelog_writer) == rows
    assert total(samples, OPERATOR + "numRecordsOut", is_changelog_writer) == rows
    # The rates the dashboard reads exist under the same labels (their values are
    # averages over a minute, updated every few seconds).
    for rate in ("numRecordsInPerSecond", "numRecordsOutPerSecond"):
        assert any(is_source(labels) for labels, _ in samples[OPERATOR + rate]), rate
    assert any(is_changelog_writer(ls) for ls, _ in samples[OPERATOR + "numRecordsOutPerSecond"])
    assert [value for _, value in samples["flink_jobmanager_numRunningJobs"]] == [1.0]
    (watermark,) = [v for ls, v in samples[OPERATOR + "currentOutputWatermark"] if is_source(ls)]
    assert 0 < watermark <= EVENTS[-1].ts
    assert {labels["job_name"] for labels, _ in samples[OPERATOR + "numRecordsIn"]} == {
        "streamrec_features"
    }
    # Every Flink name the dashboard may query is one this job really exports.
    assert set(samples) >= FLINK_METRICS
    # The endpoint is where it was asked to be, and nothing listens beyond loopback.
    ours = {(item.address, item.port) for items in listening.values() for item in items}
    assert ("127.0.0.1", port) in ours
    assert exposed(listening) == []
