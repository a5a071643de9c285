"""``make bench-sla``'s pure parts: arrivals, the judgement of a held rate, the search, stages."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from tests.benchmarks.e2e import trial_env
from tests.benchmarks.measured import Measured
from tests.benchmarks.sla import parse_args
from tests.benchmarks.sla_compare import compare, parse_rates
from tests.benchmarks.sla_report import Trial, triton_rows
from tests.benchmarks.sla_search import (
    LateCounter,
    RateSearch,
    Sla,
    Verdict,
    histogram_totals,
    poisson_offsets,
    poisson_schedule,
    stage_means,
    triton_totals,
)

MS = 1_000_000  # ns


def test_exponential_gaps_come_from_the_uniform_draws() -> None:
    # u = 1 - e^-1 gives a gap of 1 / rate, u = 1 - e^-2 twice that; u = 0 no gap at all.
    uniforms = [1 - math.exp(-1), 1 - math.exp(-2), 0.0]
    assert poisson_offsets(10, uniforms) == pytest.approx([0.1, 0.3, 0.3])


def test_a_schedule_is_seeded_bounded_and_near_its_rate() -> None:
    schedule = poisson_schedule(100, 20, seed="7:100")
    assert schedule == poisson_schedule(100, 20, seed="7:100")
    assert schedule != poisson_schedule(100, 20, seed="8:100")
    assert schedule == sorted(schedule) and schedule[0] > 0 and schedule[-1] < 20
    # 2,000 expected arrivals; a Poisson count's sd is sqrt(2000), about 45.
    assert abs(len(schedule) - 2000) < 4 * 45


def test_the_schedule_does_not_slow_down_for_answers() -> None:
    # Open loop: the same draws give the same times whatever happened meanwhile.
    assert poisson_schedule(50, 2, seed="s")[:5] == poisson_schedule(50, 10, seed="s")[:5]


def test_a_rate_passes_at_the_bound_and_fails_past_it() -> None:
    sla = Sla(latency_ms=50, max_error_rate=0.001)
    # 1,000 answers: nearest-rank p99 is the sorted value at round(0.99 * 999) = 989.
    fast = [10.0] * 989 + [50.0] * 11
    ok = sla.judge(fast, sent=1000, failures=0)
    assert (ok.p99_ms, ok.error_rate, ok.passed, ok.why) == (50.0, 0.0, True, "ok")
    slow = [10.0] * 989 + [50.5] * 11
    assert not sla.judge(slow, sent=1000, failures=0).passed


def test_one_error_in_a_thousand_fails_and_none_passes() -> None:
    sla = Sla(latency_ms=50, max_error_rate=0.001)
    one = sla.judge([10.0] * 999, sent=1000, failures=1)
    assert one.p99_ms == 10.0  # the unanswered one is at +infinity but above rank 989
    assert (one.error_rate, one.passed) == (0.001, False)
    assert one.why == "errors 0.10% >= 0.10%"
    assert sla.judge([10.0] * 2000, sent=2000, failures=0).passed


def test_errors_push_p99_to_infinity_and_no_request_is_no_pass() -> None:
    sla = Sla()
    many = sla.judge([10.0] * 98, sent=100, failures=2)
    assert many.p99_ms == math.inf and not many.passed
    nothing = sla.judge([], sent=0, failures=0)
    assert math.isnan(nothing.p99_ms) and nothing.error_rate == 1.0 and not nothing.passed


def test_a_held_rate_is_doomed_once_its_late_requests_fill_the_tail() -> None:
    sla = Sla(latency_ms=50, max_error_rate=0.001)
    # 1,000 planned: rank 989, so 11 late requests put p99 over the bound.
    assert sla.late_limit(1000) == 11
    assert not sla.doomed(late=10, degraded=0, planned=1000)
    assert sla.doomed(late=11, degraded=0, planned=1000)
    # 100 planned: rank round(98.01) = 98, so 2 late requests are enough.
    assert sla.late_limit(100) == 2
    # Degraded answers are errors: 1 of 1,000 reaches the 0.1% bound.
    assert sla.doomed(late=1, degraded=1, planned=1000)
    assert not sla.doomed(late=0, degraded=0, planned=1)


def test_late_counter_counts_late_answers_degraded_and_overdue_once() -> None:
    counter = LateCounter(latency_ms=50)
    for n in range(5):
        counter.add(f"r{n}", 0)
    arrived = {"r0": (20 * MS, False), "r1": (60 * MS, False), "r2": (10 * MS, True)}
    counter.update(arrived, now_ns=40 * MS)  # r3, r4 unanswered but not yet 50 ms old
    assert (counter.late, counter.degraded) == (2, 1)
    counter.update(arrived, now_ns=51 * MS)  # now they are
    assert counter.late == 4
    counter.update({**arrived, "r3": (70 * MS, False)}, now_ns=80 * MS)
    assert counter.late == 4  # each request counted once


def capped(cap: float) -> RateSearch:
    """Run a search against a system that passes every rate up to ``cap``."""
    search = RateSearch(start=10, factor=2, max_rungs=8, bisect_steps=3)
    while (rate := search.next_rate()) is not None:
        search.record(rate, rate <= cap)
    return search


def test_ladder_then_bisection_between_last_pass_and_first_failure() -> None:
    search = capped(137)
    # Ladder 10, 20, 40, 80 pass, 160 fails; then (80+160)/2=120 pass, (120+160)/2=140 fail,
    # (120+140)/2=130 pass.
    assert [r for r, _ in search.trials] == [10, 20, 40, 80, 160, 120, 140, 130]
    assert (search.passing, search.failing, search.bounded) == (130, 140, True)


def test_a_failing_first_rung_bisects_down_from_zero() -> None:
    search = capped(3)
    assert [r for r, _ in search.trials] == [10, 5, 2.5, 3.75]
    assert (search.passing, search.failing) == (2.5, 3.75)


def test_nothing_passing_is_zero_and_the_ladder_is_bounded() -> None:
    assert capped(0).passing == 0.0
    search = RateSearch(start=10, factor=2, max_rungs=3)
    while (rate := search.next_rate()) is not None:
        search.record(rate, True)
    assert [r for r, _ in search.trials] == [10, 20, 40]
    assert (search.passing, search.bounded) == (40, False)  # a lower bound only


def test_a_failing_hold_is_held_again_and_fails_only_if_every_hold_does() -> None:
    search = RateSearch(start=10, factor=2, max_rungs=8, bisect_steps=1, rehold=1)
    verdicts = iter([True, False, True, False, False, True])
    held = []
    while (rate := search.next_rate()) is not None:
        held.append(rate)
        search.record(rate, next(verdicts))
    # 10 passes; 20 fails, passes when held again; 40 fails twice; one bisection: 30.
    assert held == [10, 20, 20, 40, 40, 30]
    assert search.trials == [(10, True), (20, True), (40, False), (30, True)]
    assert search.reheld == [20, 40]
    assert (search.passing, search.failing) == (30, 40)


def test_no_rehold_by_default() -> None:
    search = RateSearch(start=10, bisect_steps=0)
    search.record(10, False)
    assert (search.next_rate(), search.failing, search.reheld) == (None, 10, [])


def test_a_pass_above_a_failure_does_not_count() -> None:
    search = RateSearch(start=10, bisect_steps=1)
    for rate, ok in [(10, True), (20, False)]:
        search.record(rate, ok)
    search.record(15, False)
    assert (search.passing, search.failing, search.next_rate()) == (10, 15, None)
    late = RateSearch(start=10)
    for rate, ok in [(10, True), (40, True), (20, False)]:  # noise: 40 passed, 20 failed
        late.record(rate, ok)
    assert late.passing == 10


SCRAPE = """# TYPE streamrec_worker_stage_seconds histogram
streamrec_worker_stage_seconds_bucket{{stage="rank",le="0.01"}} 1.0
streamrec_worker_stage_seconds_bucket{{stage="rank",le="+Inf"}} {rank_n}
streamrec_worker_stage_seconds_count{{stage="rank"}} {rank_n}
streamrec_worker_stage_seconds_sum{{stage="rank"}} {rank_s}
streamrec_worker_stage_seconds_bucket{{stage="poll",le="+Inf"}} {poll_n}
streamrec_worker_stage_seconds_count{{stage="poll"}} {poll_n}
streamrec_worker_stage_seconds_sum{{stage="poll"}} {poll_s}
# TYPE streamrec_worker_end_to_end_seconds histogram
streamrec_worker_end_to_end_seconds_bucket{{le="+Inf"}} {e2e_n}
streamrec_worker_end_to_end_seconds_count {e2e_n}
streamrec_worker_end_to_end_seconds_sum {e2e_s}
# TYPE streamrec_worker_requests_total counter
streamrec_worker_requests_total {e2e_n}
"""


def test_stage_means_difference_two_scrapes() -> None:
    before = histogram_totals(SCRAPE.format(rank_n=4, rank_s=0.04, poll_n=10, poll_s=0.05,
                                            e2e_n=100, e2e_s=2.0))  # fmt: skip
    after = histogram_totals(SCRAPE.format(rank_n=14, rank_s=0.24, poll_n=10, poll_s=0.05,
                                           e2e_n=300, e2e_s=8.0))  # fmt: skip
    assert before["rank"] == (0.04, 4.0)
    means = stage_means(before, after)
    assert means["rank"][0] == pytest.approx(0.02)  # 0.2 s over 10 batches
    assert means["end_to_end"][0] == pytest.approx(0.03)  # 6 s over 200 requests
    assert (means["rank"][1], means["end_to_end"][1]) == (10, 200)
    assert "poll" not in means  # no observation in between
    assert "requests" not in means  # counters are not histograms


def test_the_trial_variant_takes_worker_settings_as_pairs() -> None:
    args = parse_args(
        ["--variants", "worker,trial", "--trial-env", "STREAMREC_WORKER_SWITCH_INTERVAL_US=500",
         "--trial-env", "STREAMREC_WORKER_BATCH_SIZE=32"]
    )  # fmt: skip
    assert trial_env(args.trial_env) == {
        "STREAMREC_WORKER_SWITCH_INTERVAL_US": "500",
        "STREAMREC_WORKER_BATCH_SIZE": "32",
    }
    assert trial_env(["A=b=c"]) == {"A": "b=c"}  # the first = splits
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        trial_env(["STREAMREC_WORKER_BATCH_SIZE"])


def test_compare_rates_are_parsed_and_bad_ones_refused() -> None:
    assert parse_rates("400, 480") == [400.0, 480.0]
    for bad in ("", "400,fast", "0,400"):
        with pytest.raises(SystemExit, match="--compare-at"):
            parse_rates(bad)


def test_compare_holds_every_variant_at_every_rate_and_drops_the_warm_up() -> None:
    held: list[tuple[str, float, int]] = []

    def hold(v: Any, rate: float, round_no: int) -> Trial:
        held.append((v.name, rate, round_no))
        latencies = [rate / 10] * 99  # p99 = rate / 10 ms
        verdict = Verdict(rate / 10, 0.0, rate < 450, "ok")
        return Trial(rate, Measured(99, 99, 0, 1.0, latencies), rate, 0.5, verdict, None)

    running = [SimpleNamespace(name="worker"), SimpleNamespace(name="trial")]
    kept = compare(running, hold, [400, 480], repeats=2, discard_first=1)  # type: ignore[arg-type]
    # Alternation: each rate by every variant in turn, the rates in order, three rounds.
    assert held == [
        (name, rate, n) for n in range(3) for rate in (400, 480) for name in ("worker", "trial")
    ]
    assert {name: {rate: len(t) for rate, t in by.items()} for name, by in kept.items()} == {
        "worker": {400: 2, 480: 2},
        "trial": {400: 2, 480: 2},
    }


TRITON_TEXT = """\
# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="ranker_python",version="1"} 90
nv_inference_request_success{model="ranker_python",version="2"} 10
nv_inference_request_success{model="ranker_torch",version="1"} 7
# HELP nv_inference_request_duration_us Cumulative inference request duration
# TYPE nv_inference_request_duration_us counter
nv_inference_request_duration_us{model="ranker_python",version="1"} 270000
nv_inference_request_duration_us{model="ranker_python",version="2"} 30000
# HELP nv_inference_compute_infer_duration_us Cumulative compute inference duration
# TYPE nv_inference_compute_infer_duration_us counter
nv_inference_compute_infer_duration_us{model="ranker_python",version="1"} 200000
"""


def test_tritons_durations_are_summed_over_versions_of_one_model() -> None:
    totals = triton_totals(TRITON_TEXT, "ranker_python")
    assert totals["triton_request"] == pytest.approx((0.3, 100.0))
    assert totals["triton_infer"] == pytest.approx((0.2, 100.0))
    before = {"triton_request": (0.1, 50.0), "rank": (0.5, 100.0)}
    means = stage_means(before, {**totals, "rank": (1.5, 200.0)})
    assert means["triton_request"] == pytest.approx((0.2 / 50, 50))
    rows = {row[0]: row[1] for row in triton_rows(means)}
    assert rows["ranker calls per micro-batch"] == "0.50"
    # 10 ms of rank per batch, half a call of 4 ms in the server: 8 ms outside it.
    assert rows["rank outside the server (gRPC both ways, client, asyncio), per batch"] == "8.00"
