"""The end-to-end and freshness benchmarks count failures against their figures."""

from __future__ import annotations

import json
import math

import pytest

from schemas.records import BehaviorEvent
from tests.benchmarks.e2e import VariantResult
from tests.benchmarks.freshness import WARM_UP_USER_FROM, Freshness, Probe, job_latency_ms
from tests.benchmarks.measured import Measured, tally

MS = 1_000_000  # ns


def test_degraded_answers_are_not_throughput_and_count_as_errors() -> None:
    sent = {f"r{n}": 0 for n in range(10)}
    arrived = {f"r{n}": (20 * MS, n >= 6) for n in range(8)}  # 6 good, 2 degraded, 2 unanswered
    run = tally(sent, arrived)
    assert (run.sent, run.answered, run.degraded, run.good) == (10, 8, 2, 6)
    assert run.seconds == pytest.approx(0.02)
    assert run.rps == pytest.approx(6 / 0.02)  # counting every answer would give 8 / 0.02
    assert run.error_rate == pytest.approx(0.4)
    assert run.latencies_ms == [20.0] * 6


def test_unanswered_requests_are_beyond_the_deadline_in_the_percentiles() -> None:
    sent = {f"r{n}": 0 for n in range(100)}
    arrived = {f"r{n}": (5 * MS, False) for n in range(98)}
    run = tally(sent, arrived)
    assert run.p(50) == pytest.approx(5.0)
    assert run.p(99) == math.inf  # over answered requests only it would be 5 ms


def test_nothing_answered_is_all_errors() -> None:
    run = tally({"r0": 0, "r1": 0}, {})
    assert (run.rps, run.error_rate) == (0.0, 1.0)
    assert run.p(50) == math.inf


def test_a_variant_error_rate_covers_every_run() -> None:
    clean = Measured(100, 100, 0, 1.0, [1.0] * 100)
    bursts = [clean, Measured(100, 90, 0, 1.0, [1.0] * 90), clean]
    result = VariantResult("worker", bursts, clean, Measured(100, 100, 5, 1.0, [1.0] * 95))
    assert result.total.sent == 500
    assert result.total.error_rate == pytest.approx(15 / 500)
    assert result.saturation.rps == 100  # the median burst


def test_unreadable_clicks_are_failures_in_freshness() -> None:
    fresh = Freshness([40.0] * 97, unreadable=3)
    assert fresh.samples == 100
    assert fresh.unreadable_rate == pytest.approx(0.03)
    assert fresh.p(50) == 40.0
    assert fresh.p(99) == math.inf  # leaving them out would give 40 ms


def test_probe_times_each_sampled_click_once_and_keeps_the_rest_pending() -> None:
    probe = Probe(client=None)  # type: ignore[arg-type]  # _check never reads the store
    probe.expect(BehaviorEvent(7, 100, 1, "pv", 1_000), sent_at=10.0)
    probe.expect(BehaviorEvent(7, 101, 1, "pv", 2_000), sent_at=11.0)
    probe.expect(BehaviorEvent(8, 100, 1, "pv", 1_000), sent_at=10.0)
    # User 7's row holds the first click (and one never sampled); user 8's is not read.
    probe._check(7, [(100, 1_000), (555, 1_500)], seen_at=10.25)
    assert probe.latencies_ms == [250.0]
    assert probe.waiting == 2
    probe._check(7, [(100, 1_000), (101, 2_000)], seen_at=11.5)
    assert probe.latencies_ms == [250.0, 500.0]
    assert list(probe.pending) == [8]


def test_the_jobs_share_is_the_fresh_rows_stamp_minus_the_events_send_time() -> None:
    def row(user: int, sent_ms: int) -> bytes:
        return json.dumps({"view": "user_recent", "user_id": user, "latest_ts": sent_ms,
                           "events": [f"{sent_ms}:1:1:pv"]}).encode()  # fmt: skip

    key = b"user_recent:7"
    assert job_latency_ms(key, row(7, 5_000), created_ms=5_040, measured_from_ms=5_000) == 40.0
    # The warm-up's events, its probe clicks, other views and tombstones are not measured.
    assert job_latency_ms(key, row(7, 4_999), created_ms=5_040, measured_from_ms=5_000) is None
    warm_up_click = row(WARM_UP_USER_FROM + 1, 6_000)
    assert job_latency_ms(key, warm_up_click, created_ms=6_010, measured_from_ms=5_000) is None
    assert job_latency_ms(b"user_windows:7", row(7, 6_000), 6_010, 5_000) is None
    assert job_latency_ms(key, None, created_ms=6_010, measured_from_ms=5_000) is None
