"""The writer's metrics: every known series at 0 from start, and the loop's own counts exported."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from prometheus_client import generate_latest

from jobs.feature_writer.covisit import CovisitOptions
from jobs.feature_writer.loop import FeatureWriterLoop, WriterStats, event_time_ms
from jobs.feature_writer.metrics import STAT_COUNTERS, WriterMetrics
from jobs.feature_writer.rows import ConversionOptions
from runtime.online.redis_store import ScriptCall, WriteResult
from schemas.errors import INVALID_RECORD_KINDS, MalformedRecord
from schemas.features import UserRecentEvents
from schemas.online.feast_format import FeatureRow
from tests.jobs.feature_writer.samples import MINUTE, T0, item_window, recent
from tests.jobs.feature_writer.test_loop import FakeConsumer, FlakyWriter, make_loop, write_batches

# The progress line's names for the WriterStats fields.
LINE_NAMES = {"bad_rows": "bad"}


def value(metrics: WriterMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    assert found is not None, (name, labels)
    return found


def test_stats_fields_and_exported_counters_are_the_same_set() -> None:
    counted = {f.name for f in fields(WriterStats) if f.type in (int, "int")}
    assert set(STAT_COUNTERS) == counted
    names = [name for name, _help in STAT_COUNTERS.values()]
    assert len(set(names)) == len(names)
    assert all(name.startswith("streamrec_writer_") for name in names)


def test_a_fresh_exposition_has_every_known_series_at_zero() -> None:
    text = generate_latest(WriterMetrics().registry).decode()
    for kind in INVALID_RECORD_KINDS:
        assert f'streamrec_writer_dead_letters_total{{kind="{kind}"}} 0.0' in text, kind
    for name, _help in STAT_COUNTERS.values():
        assert f"\n{name}_total 0.0\n" in text, name
    for histogram in ("batch_size", "batch_write_seconds", "commit_seconds"):
        assert f"\nstreamrec_writer_{histogram}_count 0.0\n" in text, histogram
    assert "\nstreamrec_writer_newest_event_timestamp_seconds 0.0\n" in text
    assert not re.search(r"^streamrec_(?!writer_)", text, re.MULTILINE)


class RefusingConsumer(FakeConsumer):
    """Refuses one undecodable record at its first poll, as RecordConsumer's router does."""

    def poll_batch(self, max_records: int = 500, timeout_s: float = 0.5) -> list[tuple[Any, Any]]:
        if not self.dead_letters.published:
            self.dead_letters.publish("junk", MalformedRecord("not JSON"))
            self.consumed += 1
        return super().poll_batch(max_records, timeout_s)


class StaleWriter(FlakyWriter):
    """FlakyWriter that finds the first row of each write already stored as new."""

    def write(self, rows: list[FeatureRow], also: list[ScriptCall] | None = None) -> WriteResult:
        result = super().write(rows, also)
        stale = min(1, result.written)
        return WriteResult(result.written - stale, stale, result.also)


def run_loop() -> tuple[FeatureWriterLoop, RefusingConsumer]:
    broken = UserRecentEvents(user_id=9, latest_ts=T0, events=[f"{T0}:x:1:pv"])
    newest = T0 + 5 * MINUTE
    consumer = RefusingConsumer(
        [
            [("a", recent(user_id=1)), ("b", broken), ("c", item_window(item_id=5))],
            [],  # an empty poll: nothing counted, nothing committed
            # Two updates of one user coalesce into one row; two users, two rows.
            [("d", recent(user_id=1, latest_ts=T0 + MINUTE)), ("e", recent(user_id=1, n=2)),
             ("f", recent(user_id=2, latest_ts=newest)), ("g", item_window(item_id=6))],
        ]
    )  # fmt: skip
    writer = StaleWriter(failures=2, consumer=consumer)
    loop = make_loop(consumer, writer, covisit=CovisitOptions(project="p"))
    write_batches(loop, 3)
    return loop, consumer


def test_the_counters_are_the_loops_own_counts() -> None:
    loop, _consumer = run_loop()
    stats, metrics = loop.stats, loop.metrics
    assert (stats.records, stats.bad_rows, stats.batches, stats.redis_failures) == (7, 1, 2, 2)
    assert stats.rows < stats.records - stats.bad_rows  # coalesced
    assert stats.stale == 2 and stats.written == stats.rows - 2 and stats.covisits > 0
    line = dict(re.findall(r"(\w+)=(\d+)", stats.line()))
    for field, (name, _help) in STAT_COUNTERS.items():
        exported = value(metrics, name + "_total")
        assert exported == getattr(stats, field), field
        assert exported == int(line[LINE_NAMES.get(field, field)]), field


def test_dead_letters_by_kind_follow_the_publishers_counts() -> None:
    loop, consumer = run_loop()
    assert consumer.dead_letters.counts == {"malformed": 1, "schema": 1}
    for kind in INVALID_RECORD_KINDS:
        exported = value(loop.metrics, "streamrec_writer_dead_letters_total", kind=kind)
        assert exported == consumer.dead_letters.counts[kind], kind


def test_histograms_count_batches_writes_and_commits() -> None:
    loop, consumer = run_loop()
    metrics, stats = loop.metrics, loop.stats
    assert value(metrics, "streamrec_writer_batch_size_count") == stats.batches
    assert value(metrics, "streamrec_writer_batch_size_sum") == stats.records
    # Two writes succeeded (the failed attempts are redis_failures); two polls had records.
    assert value(metrics, "streamrec_writer_batch_write_seconds_count") == 2
    assert value(metrics, "streamrec_writer_commit_seconds_count") == 2
    assert consumer.commits == 2


def test_the_newest_event_time_is_the_records_not_the_rows_clock() -> None:
    loop, _consumer = run_loop()
    newest = value(loop.metrics, "streamrec_writer_newest_event_timestamp_seconds")
    # The fresh view's rows carry the writer's wall clock; the gauge is event time.
    assert newest == (T0 + 5 * MINUTE) / 1000
    assert event_time_ms(item_window(window_end=T0)) == T0
    assert event_time_ms(recent(latest_ts=T0 + 1)) == T0 + 1


def test_a_loop_without_a_registry_given_has_its_own() -> None:
    consumer = FakeConsumer([[("m", recent(user_id=1))]])
    first = make_loop(consumer, FlakyWriter(0, consumer))
    second = make_loop(consumer, FlakyWriter(0, consumer))
    write_batches(first)
    assert first.metrics.registry is not second.metrics.registry
    assert value(first.metrics, "streamrec_writer_records_total") == 1
    assert value(second.metrics, "streamrec_writer_records_total") == 0
    shared = WriterMetrics()
    loop = FeatureWriterLoop(consumer, FlakyWriter(0, consumer), ConversionOptions(),  # type: ignore[arg-type]
                             metrics=shared)  # fmt: skip
    assert loop.metrics is shared
