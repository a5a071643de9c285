"""The canary's judgement, from figures alone (no services)."""

from __future__ import annotations

import math

import pytest
from prometheus_client import generate_latest

from inference.serving.canary import (
    Guards,
    VariantFigures,
    judge,
    parse_duration_s,
    parse_steps,
    psi,
    quantile,
)
from inference.serving.worker_metrics import parse
from inference.worker.metrics import SCORE_BUCKETS, WorkerMetrics

LATENCY = (0.01, 0.025, 0.05, 0.1, math.inf)


def histogram(bounds: tuple[float, ...], counts: list[float]) -> tuple[tuple[float, float], ...]:
    """Cumulative buckets from per-bucket counts."""
    total, out = 0.0, []
    for le, count in zip(bounds, counts, strict=True):
        total += count
        out.append((le, total))
    return tuple(out)


def figures(ok: float, errors: float = 0, latency: list[float] | None = None,
            scores: list[float] | None = None) -> VariantFigures:  # fmt: skip
    bounds = (*SCORE_BUCKETS, math.inf)
    return VariantFigures(
        {"ok": ok, "model_error": errors},
        histogram(LATENCY, latency or [ok + errors, 0, 0, 0, 0]),
        histogram(bounds, scores or [0.0] * len(bounds)),
    )


def test_one_model_error_in_the_first_answers_breaches() -> None:
    breach = judge(figures(ok=30, errors=1), figures(ok=300), Guards())
    assert breach is not None and breach.check == "error_rate"


def test_a_slow_canary_breaches_but_a_box_that_slows_both_does_not() -> None:
    slow = figures(ok=100, latency=[0, 0, 0, 100, 0])  # every answer within 100 ms, over 50
    fast = figures(ok=1000, latency=[1000, 0, 0, 0, 0])
    breach = judge(slow, fast, Guards())
    assert breach is not None and breach.check == "latency_p99"
    assert judge(slow, slow, Guards()) is None


def test_one_slow_answer_among_a_few_dozen_is_not_a_slow_canary() -> None:
    # make canary-check: 52 answers at 50%, one of them over 50 ms after a stall of the box.
    canary = figures(ok=52, latency=[30, 15, 6, 1, 0])
    champion = figures(ok=700, latency=[400, 250, 50, 0, 0])
    assert judge(canary, champion, Guards()) is None
    # make canary-check at a load of 9: 5 of 91 over 50 ms against the champion's 4%.
    loaded = figures(ok=700, latency=[400, 200, 72, 28, 0])
    assert judge(figures(ok=91, latency=[40, 30, 16, 5, 0]), loaded, Guards()) is None
    # ...while most answers slow against the same loaded champion is the canary's doing.
    breach = judge(figures(ok=91, latency=[10, 20, 21, 40, 0]), loaded, Guards())
    assert breach is not None and breach.check == "latency_p99"
    # The same share of slow answers over 500 answers is a tail the p99 does see.
    slow_tail = figures(ok=500, latency=[300, 150, 40, 10, 0])
    breach = judge(slow_tail, champion, Guards())
    assert breach is not None and breach.check == "latency_p99" and "p99 " in str(breach)


def test_latency_is_not_judged_on_a_handful_of_answers() -> None:
    few = figures(ok=10, latency=[0, 0, 0, 10, 0])
    assert judge(few, figures(ok=1000), Guards()) is None


def test_a_shifted_score_distribution_breaches() -> None:
    n = len(SCORE_BUCKETS) + 1
    low = [0.0] * n
    low[2] = 5000
    high = [0.0] * n
    high[15] = 5000
    assert judge(figures(ok=50, scores=low), figures(ok=50, scores=low), Guards()) is None
    breach = judge(figures(ok=50, scores=high), figures(ok=50, scores=low), Guards())
    assert breach is not None and breach.check == "score_shift"


def test_quantile_is_the_bucket_bound_and_psi_is_zero_for_equal_shapes() -> None:
    buckets = histogram(LATENCY, [90, 9, 1, 0, 0])
    assert quantile(buckets, 0.5) == 0.01
    assert quantile(buckets, 0.99) == 0.025
    assert math.isnan(quantile((), 0.99))
    assert psi(buckets, histogram(LATENCY, [900, 90, 10, 0, 0])) == pytest.approx(0.0)


def test_window_figures_are_differences() -> None:
    before, after = figures(ok=10, errors=1), figures(ok=25, errors=1)
    window = after - before
    assert window.answers == {"ok": 15, "model_error": 0} and window.total == 15


# One worker's exposition, as prometheus_client writes it (built by hand: a process that
# imported the Feast SDK keeps counters in shared files, so two registries in one test
# process would not hold two workers' figures).
WORKER = """# HELP streamrec_worker_variant_answers_total Answers per variant.
# TYPE streamrec_worker_variant_answers_total counter
streamrec_worker_variant_answers_total{{outcome="ok",variant="canary"}} {ok}
streamrec_worker_variant_answers_total{{outcome="model_error",variant="canary"}} 1.0
# HELP streamrec_worker_variant_seconds Request to answer.
# TYPE streamrec_worker_variant_seconds histogram
streamrec_worker_variant_seconds_bucket{{le="0.01",variant="canary"}} 0.0
streamrec_worker_variant_seconds_bucket{{le="0.025",variant="canary"}} 1.0
streamrec_worker_variant_seconds_bucket{{le="+Inf",variant="canary"}} 1.0
streamrec_worker_variant_seconds_count{{variant="canary"}} 1.0
streamrec_worker_variant_seconds_sum{{variant="canary"}} 0.02
# HELP streamrec_worker_variant_scores Scores.
# TYPE streamrec_worker_variant_scores histogram
streamrec_worker_variant_scores_bucket{{le="0.45",variant="champion"}} 1.0
streamrec_worker_variant_scores_bucket{{le="+Inf",variant="champion"}} 1.0
streamrec_worker_variant_scores_count{{variant="champion"}} 1.0
streamrec_worker_variant_scores_sum{{variant="champion"}} 0.42
"""


def test_the_workers_exposition_is_summed_per_variant() -> None:
    parsed = parse([WORKER.format(ok=3.0), WORKER.format(ok=4.0)])
    assert parsed["canary"].answers == {"ok": 7, "model_error": 2}
    assert dict(parsed["canary"].latency)[0.025] == 2
    assert dict(parsed["champion"].scores)[0.45] == 2


def test_the_exposition_names_match_what_the_worker_exports() -> None:
    exported = generate_latest(WorkerMetrics().registry).decode()
    for name in ("streamrec_worker_variant_answers", "streamrec_worker_variant_seconds",
                 "streamrec_worker_variant_scores"):  # fmt: skip
        assert f"# TYPE {name}" in exported


@pytest.mark.parametrize("text", ["", "5,1,100", "1,5", "0,100", "x"])
def test_steps_must_rise_to_a_hundred(text: str) -> None:
    with pytest.raises(ValueError, match="--steps"):
        parse_steps(text)


def test_steps_and_durations_parse() -> None:
    assert parse_steps("1,5,25,50,100") == [1, 5, 25, 50, 100]
    assert [parse_duration_s(t) for t in ("60s", "2m", "500ms", "1.5")] == [60, 120, 0.5, 1.5]
    with pytest.raises(ValueError, match="duration"):
        parse_duration_s("soon")
