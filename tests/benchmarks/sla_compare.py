"""``bench-sla --compare-at``: variants held at the same fixed rates in alternation, no search.

A setting's effect on the tail is smaller than the box's drift over the minutes a
ladder takes (the same code's SLA rate has moved from 261 to 482 rps within a day).
Here every variant holds each rate of ``--compare-at`` in turn, ``--repeats`` times,
so drift falls on both sides alike; the first pass over the rates is also a warm-up
after the bursts and can be dropped with ``--discard-first``. Each hold is judged as
in the search (early stops included); the table gives, per variant and rate, the holds
passed and the median p50 and p99; the plot pools each variant's holds per rate.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.benchmarks.e2e import Running
from tests.benchmarks.measured import combined
from tests.benchmarks.report import print_table, result_line, save_cdf_plot
from tests.benchmarks.sla_report import Trial, hold_line

COMPARE_REPORT = Path("reports/bench-sla-compare.png")


def parse_rates(text: str) -> list[float]:
    try:
        rates = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise SystemExit(f"--compare-at wants rates like 400,480: {exc}") from None
    if not rates or min(rates) <= 0:
        raise SystemExit(f"--compare-at wants positive rates, got {text!r}")
    return rates


def compare(
    running: Sequence[Running],
    hold: Callable[[Running, float, int], Trial],
    rates: Sequence[float],
    repeats: int,
    discard_first: int,
) -> dict[str, dict[float, list[Trial]]]:
    """Every variant at every rate, ``repeats`` kept rounds after ``discard_first``;
    ``hold(variant, rate, round)`` holds one."""
    kept: dict[str, dict[float, list[Trial]]] = {v.name: {r: [] for r in rates} for v in running}
    for round_no in range(discard_first + repeats):
        for rate in rates:
            for v in running:
                trial = hold(v, rate, round_no)  # the round keeps request ids apart
                dropped = round_no < discard_first
                print(("(warm-up) " if dropped else "") + hold_line(v.name, trial), flush=True)
                if not dropped:
                    kept[v.name][rate].append(trial)
    return kept


def compare_report(kept: dict[str, dict[float, list[Trial]]], sla_ms: float) -> None:
    rows, values, series = [], {}, {}
    for name, by_rate in kept.items():
        for rate, trials in by_rate.items():
            if not trials:
                continue
            passed = sum(t.verdict.passed for t in trials)
            p50 = statistics.median(t.measured.p(50) for t in trials)
            p99 = statistics.median(t.measured.p(99) for t in trials)
            rows.append([name, f"{rate:g}", f"{passed}/{len(trials)}", f"{p50:.1f}", f"{p99:.1f}",
                         " ".join(f"{t.measured.p(99):.0f}" for t in trials)])  # fmt: skip
            values[f"{name}_passed_at_{rate:g}"] = f"{passed}/{len(trials)}"
            values[f"{name}_p99_ms_at_{rate:g}"] = f"{p99:.1f}"
            pooled = combined([t.measured for t in trials])
            series[f"{name} @ {rate:g} rps"] = (pooled.latencies_ms, pooled.failures)
    print_table(["variant", "rate", "passed", "median p50 ms", "median p99 ms", "p99 per hold"],
                rows)  # fmt: skip
    save_cdf_plot(COMPARE_REPORT, "request → answer latency, holds pooled", series, sla_ms)
    print(f"plot: {COMPARE_REPORT}")
    print(result_line(**values))
