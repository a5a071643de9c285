"""The pure parts of ``make bench-sla``: arrivals, the judgement of a held rate, the search.

- :func:`poisson_schedule`: open-loop arrivals, seeded exponential gaps, sent on
  schedule whatever the answers do (MLPerf's server scenario).
- :class:`Sla` and :class:`LateCounter`: whether a held rate meets the SLA (p99 with
  every failure at +infinity, and an error rate under a bound), and when it is
  already certain that it cannot, so an overloaded rate can stop early.
- :class:`RateSearch`: a coarse ladder of rates, then a bounded bisection between the
  last passing and the first failing one.
- :func:`histogram_totals` and :func:`stage_means`: the worker's Prometheus
  histograms scraped before and after a held rate, as mean seconds per stage.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from tests.benchmarks.report import failure_percentile, failure_rate


def poisson_offsets(rate: float, uniforms: Sequence[float]) -> list[float]:
    """Arrival times (s from the start) whose gaps are ``-ln(1 - u) / rate`` for each ``u``."""
    offsets, at = [], 0.0
    for u in uniforms:
        at += -math.log1p(-u) / rate
        offsets.append(at)
    return offsets


def poisson_schedule(rate: float, seconds: float, seed: str) -> list[float]:
    """Poisson arrivals at ``rate`` per second over ``seconds``, the same for the same seed."""
    draw = random.Random(seed)
    offsets: list[float] = []
    while True:
        (at,) = poisson_offsets(rate, [draw.random()])
        at += offsets[-1] if offsets else 0.0
        if at >= seconds:
            return offsets
        offsets.append(at)


@dataclass(frozen=True)
class Verdict:
    p99_ms: float
    error_rate: float
    passed: bool
    why: str  # "ok", or what failed


@dataclass(frozen=True)
class Sla:
    """p``percentile`` latency at most ``latency_ms`` and an error rate under ``max_error_rate``.

    Errors are requests unanswered or answered degraded; they also count at +infinity
    in the percentile, so a run with 1% errors has an infinite p99 whatever the rest did.
    """

    latency_ms: float = 50.0
    max_error_rate: float = 0.001
    percentile: float = 99.0

    def judge(self, latencies_ms: Sequence[float], sent: int, failures: int) -> Verdict:
        tail = failure_percentile(latencies_ms, failures, self.percentile)
        errors = failure_rate(sent, failures)
        why = []
        if not tail <= self.latency_ms:  # NaN (no sample) fails too
            why.append(f"p{self.percentile:g} {tail:.1f} ms > {self.latency_ms:g} ms")
        if not errors < self.max_error_rate:
            why.append(f"errors {errors:.2%} >= {self.max_error_rate:.2%}")
        return Verdict(tail, errors, not why, "; ".join(why) or "ok")

    def late_limit(self, planned: int) -> int:
        """How many of ``planned`` requests beyond the latency make the percentile miss it.

        The nearest-rank percentile is the sorted sample at ``round(q (n - 1))``; it is
        over the limit once the samples over it reach from that rank to the end.
        """
        rank = min(planned - 1, max(0, round(self.percentile / 100 * (planned - 1))))
        return planned - rank

    def doomed(self, late: int, degraded: int, planned: int) -> bool:
        """Whether a held rate has already failed, whatever its remaining requests do."""
        return late >= self.late_limit(planned) or degraded >= self.max_error_rate * planned


@dataclass
class LateCounter:
    """Counts requests already known to be beyond the SLA latency while a rate is held.

    A request is late once answered degraded, answered after ``latency_ms``, or still
    unanswered ``latency_ms`` after it was due; none of these can come back under it.
    """

    latency_ms: float
    late: int = 0
    degraded: int = 0
    _pending: list[tuple[str, int]] = field(default_factory=list)

    def add(self, request_id: str, due_ns: int) -> None:
        self._pending.append((request_id, due_ns))

    def update(self, arrived: Mapping[str, tuple[int, bool]], now_ns: int) -> None:
        limit = self.latency_ms * 1e6
        waiting = []
        for request_id, due in self._pending:
            answer = arrived.get(request_id)
            if answer is not None:
                at, degraded = answer
                self.degraded += degraded
                self.late += degraded or at - due > limit
            elif now_ns - due > limit:
                self.late += 1
            else:
                waiting.append((request_id, due))
        self._pending = waiting


@dataclass
class RateSearch:
    """The highest passing rate: ``start`` times ``factor`` per rung until a rung fails,
    then ``bisect_steps`` halvings of the gap between the best pass and the lowest failure.

    If the first rung fails, the bisection runs between 0 and it. Rates are only
    proposed by :meth:`next_rate`; :meth:`record` takes each one's verdict.

    A failing hold is held again, up to ``rehold`` more times, and the rate fails only
    if every one of them fails: on a shared box one stall decides a short hold (two
    late answers in a hundred fail a p99), and a search that takes it for the limit
    ends rungs below it. Every variant's search gets the same second chances.
    """

    start: float
    factor: float = 2.0
    max_rungs: int = 8
    bisect_steps: int = 3
    rehold: int = 0
    trials: list[tuple[float, bool]] = field(default_factory=list)  # verdicts, one a rate
    reheld: list[float] = field(default_factory=list)  # failed holds that were held again
    passing: float = 0.0  # the highest rate that passed below any failure; 0: none
    failing: float | None = None  # the lowest rate that failed
    _rungs: int = field(default=0, repr=False)  # ladder rungs run, once one failed
    _again: tuple[float, int] | None = field(default=None, repr=False)  # rate, holds left

    def next_rate(self) -> float | None:
        if self._again is not None:
            return self._again[0]
        if self.failing is None:
            rung = len(self.trials)
            return self.start * self.factor**rung if rung < self.max_rungs else None
        bisected = len(self.trials) - self._rungs
        if bisected >= self.bisect_steps:
            return None
        return (self.passing + self.failing) / 2

    def record(self, rate: float, passed: bool) -> None:
        if not passed:
            again = self._again
            left = again[1] if again is not None and again[0] == rate else self.rehold
            if left > 0:
                self._again = (rate, left - 1)
                self.reheld.append(rate)
                return
        self._again = None
        if not passed and self.failing is None:
            self._rungs = len(self.trials) + 1  # the ladder ends at its first failure
        self.trials.append((rate, passed))
        if not passed:
            self.failing = rate if self.failing is None else min(self.failing, rate)
        below = [r for r, ok in self.trials if ok and (self.failing is None or r < self.failing)]
        self.passing = max(below, default=0.0)

    @property
    def holding_again(self) -> bool:
        """Whether the last hold failed and its rate is proposed once more."""
        return self._again is not None

    @property
    def bounded(self) -> bool:
        """Whether a failing rate was found (else the best is only a lower bound)."""
        return self.failing is not None


HISTOGRAMS = {
    "streamrec_worker_stage_seconds": "stage",
    "streamrec_worker_end_to_end_seconds": "end_to_end",
    "streamrec_worker_batch_size": "batch_size",
}


def histogram_totals(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) per stage (and ``end_to_end``, ``batch_size``) from /metrics text."""
    totals: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        label = HISTOGRAMS.get(family.name)
        if label is None:
            continue
        for sample in family.samples:
            key = sample.labels.get("stage", label)
            slot = totals.setdefault(key, [0.0, 0.0])
            if sample.name.endswith("_sum"):
                slot[0] += sample.value
            elif sample.name.endswith("_count"):
                slot[1] += sample.value
    return {key: (s, c) for key, (s, c) in totals.items()}


# Triton's cumulative per-model durations (µs), each a share of one request's time in
# the server: queueing for an instance, copying its inputs in, the python backend's
# execute (the stub's IPC hop and the model's own work), copying the scores out.
TRITON_DURATIONS = {
    "nv_inference_request_duration_us": "triton_request",
    "nv_inference_queue_duration_us": "triton_queue",
    "nv_inference_compute_input_duration_us": "triton_input",
    "nv_inference_compute_infer_duration_us": "triton_infer",
    "nv_inference_compute_output_duration_us": "triton_output",
}


def triton_totals(text: str, model: str) -> dict[str, tuple[float, float]]:
    """(seconds, successful requests) per share of Triton's time for ``model``, over
    every version, from Triton's /metrics text (pure)."""
    sums: dict[str, float] = {}
    requests = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("model") != model:
                continue
            # The family's name: the parser gives a counter's samples a _total suffix.
            if family.name in TRITON_DURATIONS:
                key = TRITON_DURATIONS[family.name]
                sums[key] = sums.get(key, 0.0) + sample.value / 1e6
            elif family.name == "nv_inference_request_success":
                requests += sample.value
    return {key: (total, requests) for key, total in sums.items()}


def stage_means(
    before: Mapping[str, tuple[float, float]], after: Mapping[str, tuple[float, float]]
) -> dict[str, tuple[float, int]]:
    """Mean and number of observations per key between two scrapes (keys seen in between)."""
    out = {}
    for key, (total, count) in after.items():
        total0, count0 = before.get(key, (0.0, 0.0))
        n = int(count - count0)
        if n > 0:
            out[key] = ((total - total0) / n, n)
    return out
