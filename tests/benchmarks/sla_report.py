"""``make bench-sla``'s figures: held rates, capacities, the worker's stages, plot, RESULT line."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from tests.benchmarks.measured import Measured, median_burst
from tests.benchmarks.report import print_table, result_line, save_cdf_plot
from tests.benchmarks.sla_search import RateSearch, Verdict
from tests.conftest import REPO_ROOT

REPORT = REPO_ROOT / "reports" / "bench-sla.png"
STAGES = ("poll", "decode", "features", "recall", "rank", "postprocess", "produce", "commit")
# The goals: an SLA rate against its own burst, the ceiling's and the naive's.
GOALS = (("burst", 0.5), ("ceiling", 0.7), ("naive", 10.0))


@dataclass
class Trial:
    """One variant held at one rate."""

    rate: float  # the schedule's rate
    measured: Measured  # latencies from each request's scheduled time
    offered_rps: float  # requests over the measured span of their actual sends
    lag_p99_ms: float  # how far behind its schedule the sender ran (p99)
    verdict: Verdict
    stages: dict[str, tuple[float, int]] | None  # mean s and observations, from /metrics


@dataclass
class Capacity:
    name: str
    bursts: list[Measured]
    search: RateSearch
    trials: list[Trial]

    @property
    def burst(self) -> Measured:
        return median_burst(self.bursts)

    @property
    def at_sla(self) -> Trial | None:
        """The held rate the search settled on (the highest pass below any failure)."""
        passed = [t for t in self.trials if t.verdict.passed and t.rate == self.search.passing]
        return passed[-1] if passed else None

    @property
    def sla_rps(self) -> float:
        """Good answers per measured second at the SLA rate; 0 when no rate passed."""
        return self.at_sla.measured.rps if self.at_sla else 0.0


def report(capacities: list[Capacity], args: argparse.Namespace) -> None:
    capacity_table(capacities)
    by = {c.name: c for c in capacities}
    worker = by.get("worker")
    if worker and worker.at_sla and worker.at_sla.stages:
        stage_table(worker.at_sla)
    save_cdf_plot(
        REPORT,
        f"request → answer latency at each one's SLA rate (p99 ≤ {args.sla_ms:g} ms)",
        {f"{c.name} @ {c.at_sla.rate:.0f} rps": (c.at_sla.measured.latencies_ms,
                                                  c.at_sla.measured.failures)
         for c in capacities if c.at_sla},
        marker=args.sla_ms,
    )  # fmt: skip
    print(f"plot: {REPORT}")
    goals(by)
    print(result_line(**result_values(by)))


def capacity_table(capacities: list[Capacity]) -> None:
    header = ["variant", "burst rps", "SLA rate", "good rps @SLA", "p50 ms", "p99 ms", "errors",
              "requests", "first failing rate", "held rates"]  # fmt: skip
    rows = []
    for c in capacities:
        t = c.at_sla
        m = t.measured if t else None
        failing = c.search.failing
        rows.append([
            c.name, f"{c.burst.rps:.0f}", f"{t.rate:.1f}" if t else "none",
            f"{m.rps:.1f}" if m else "-", f"{m.p(50):.1f}" if m else "-",
            f"{m.p(99):.1f}" if m else "-", f"{m.failures} ({m.error_rate:.2%})" if m else "-",
            f"{m.sent:,}" if m else "-",
            f"{failing:.1f}" if failing is not None else "none (lower bound)",
            str(len(c.trials)),
        ])  # fmt: skip
    print_table(header, rows)


def stage_table(trial: Trial) -> None:
    """Mean per stage at the worker's SLA rate, from its histograms' sums and counts."""
    stages = trial.stages or {}
    print(f"\nworker at {trial.rate:.1f} rps: mean per stage (stages are per micro-batch and "
          "overlap: the next batch is polled and prepared while one is ranked)")  # fmt: skip
    rows = [[s, f"{stages[s][0] * 1e3:.2f}", f"{stages[s][1]:,}"] for s in STAGES if s in stages]
    staged = sum(stages[s][0] for s in STAGES if s in stages)
    worker_e2e = stages.get("end_to_end", (math.nan, 0))
    answered = trial.measured.latencies_ms
    client = sum(answered) / max(1, len(answered))
    batch = stages.get("batch_size", (math.nan, 0))[0]
    rows += [
        ["sum of stages", f"{staged * 1e3:.2f}", ""],
        ["worker end to end (Kafka append -> produced)", f"{worker_e2e[0] * 1e3:.2f}",
         f"{worker_e2e[1]:,}"],
        ["queueing after the append (end to end - stages)",
         f"{(worker_e2e[0] - staged) * 1e3:.2f}", ""],
        ["client (scheduled -> answer arrived)", f"{client:.2f}", f"{len(answered):,}"],
        ["kafka in and out + sender lag (client - end to end)",
         f"{client - worker_e2e[0] * 1e3:.2f}", ""],
        ["requests per micro-batch", f"{batch:.1f}", ""],
    ]  # fmt: skip
    rows += triton_rows(stages)
    print_table(["stage", "mean ms", "observations"], rows)
    print()


TRITON_ROWS = (
    ("triton_request", "Triton: a ranker call in the server (per call)"),
    ("triton_queue", "  queued for a model instance"),
    ("triton_input", "  inputs copied in"),
    ("triton_infer", "  execute: python-backend stub hop + the model"),
    ("triton_output", "  scores copied out"),
)


def triton_rows(stages: dict[str, tuple[float, int]]) -> list[list[str]]:
    """Triton's own share of the rank stage, per call and per micro-batch (pure)."""
    if "triton_request" not in stages or "rank" not in stages:
        return []
    rows = [[label, f"{stages[key][0] * 1e3:.2f}", f"{stages[key][1]:,}"]
            for key, label in TRITON_ROWS if key in stages]  # fmt: skip
    calls_per_batch = stages["triton_request"][1] / max(1, stages["rank"][1])
    outside = stages["rank"][0] - calls_per_batch * stages["triton_request"][0]
    rows += [
        ["ranker calls per micro-batch", f"{calls_per_batch:.2f}", ""],
        ["rank outside the server (gRPC both ways, client, asyncio), per batch",
         f"{outside * 1e3:.2f}", ""],
    ]  # fmt: skip
    return rows


def result_values(by: dict[str, Capacity]) -> dict[str, float | str]:
    values: dict[str, float | str] = {}
    worker = by.get("worker")
    if worker:
        values["sla_rps"] = f"{worker.sla_rps:.1f}"
        values["burst_rps"] = worker.burst.rps
    for name in ("naive", "ceiling", "workers2", "trial"):
        if name in by:
            values[f"{name}_sla_rps"] = f"{by[name].sla_rps:.1f}"
    for name in ("workers2", "trial"):
        if name in by:
            values[f"{name}_burst_rps"] = by[name].burst.rps
    if worker:
        at = worker.at_sla
        values["p99_ms_at_sla"] = f"{at.measured.p(99):.1f}" if at else "nan"
        values["error_rate_at_sla"] = f"{at.measured.error_rate:.4f}" if at else "nan"
    return values


def goals(by: dict[str, Capacity]) -> None:
    """The issue's goals, met or not, for the variants measured: for the worker and for
    two workers in one group, each against its own burst and the others' SLA rates."""
    for name, key in (("worker", "sla_rps"), ("workers2", "workers2_sla_rps")):
        if name in by:
            for other, factor in GOALS:
                goal_line(by, by[name], key, other, factor)


def goal_line(by: dict[str, Capacity], deployed: Capacity, key: str, other: str,
              factor: float) -> None:  # fmt: skip
    if other == "burst":
        base = deployed.burst.rps
    elif other in by:
        base = by[other].sla_rps
    else:
        return
    verdict = "met" if deployed.sla_rps >= factor * base else "NOT met"
    if deployed.sla_rps == 0 == base:  # zero against zero is no evidence either way
        verdict = "undecided (no rate passed on either side)"
    print(f"goal {key} >= {factor:g} x {other} ({factor * base:.1f}): "
          f"{deployed.sla_rps:.1f} -> {verdict}")  # fmt: skip


def hold_line(name: str, trial: Trial) -> str:
    m = trial.measured
    return (f"{name} @ {trial.rate:.1f} rps: offered {trial.offered_rps:.1f}, sent {m.sent:,}, "
            f"p50 {m.p(50):.1f} ms, p99 {m.p(99):.1f} ms, errors {m.error_rate:.2%}, "
            f"sender lag p99 {trial.lag_p99_ms:.1f} ms -> "
            f"{'pass' if trial.verdict.passed else 'FAIL'} ({trial.verdict.why})")  # fmt: skip
