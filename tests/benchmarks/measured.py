"""One run of requests against a worker, counted the suite's way (shared by e2e and sla).

Only good answers count: a degraded (fallback) answer is a failure, like a request
never answered. Latency percentiles put every failure at +infinity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tests.benchmarks.report import failure_percentile, failure_rate


@dataclass
class Measured:
    sent: int
    answered: int  # good and degraded
    degraded: int
    seconds: float
    latencies_ms: list[float]  # of the good answers only

    @property
    def good(self) -> int:
        return self.answered - self.degraded

    @property
    def failures(self) -> int:
        """Unanswered or degraded."""
        return self.sent - self.good

    @property
    def rps(self) -> float:
        """Good answers per second."""
        return self.good / self.seconds if self.seconds else 0.0

    @property
    def error_rate(self) -> float:
        return failure_rate(self.sent, self.failures)

    def p(self, q: float) -> float:
        """Latency percentile with every failure at +infinity."""
        return failure_percentile(self.latencies_ms, self.failures, q)


def median_burst(bursts: Sequence[Measured]) -> Measured:
    """The median burst by good answers per second."""
    return sorted(bursts, key=lambda m: m.rps)[len(bursts) // 2]


def combined(runs: Sequence[Measured]) -> Measured:
    """All requests of several runs as one (for totals and error rates)."""
    return Measured(
        sum(m.sent for m in runs), sum(m.answered for m in runs), sum(m.degraded for m in runs),
        sum(m.seconds for m in runs), [x for m in runs for x in m.latencies_ms],
    )  # fmt: skip


def tally(sent: Mapping[str, int], arrived: Mapping[str, tuple[int, bool]]) -> Measured:
    """Send times and (arrival time, degraded) per request id, in ns, as one run's figures.

    The span runs from the first send to the last answer of any kind; latencies are
    the good answers' only (degraded and unanswered requests are failures).
    """
    got = {i: arrived[i] for i in sent if i in arrived}
    latencies = [(at - sent[i]) / 1e6 for i, (at, degraded) in got.items() if not degraded]
    span = (max((t for t, _ in got.values()), default=0) - min(sent.values(), default=0)) / 1e9
    return Measured(len(sent), len(got), sum(d for _, d in got.values()), max(span, 0.0),
                    latencies)  # fmt: skip
