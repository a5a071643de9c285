"""Judging a canary against the champion from the workers' per-variant metrics (pure).

The workers count, per variant, answers by outcome, request→answer latency and
the scores they answered with (``streamrec_worker_variant_*``). A hold period's
figures are the difference between two scrapes, summed over the workers. The
canary breaches when, over the hold so far:

* **errors**: its model failed (unavailable, timed out, or answered with
  non-finite or wrongly shaped scores) for more than ``max_error_rate`` of its
  answers: with a 0.1% budget, one failure in its first thousand answers;
* **latency**: its p99 is over ``max_p99_s`` *and* its share of answers slower than
  ``max_p99_s`` is above ``latency_margin`` times the champion's beyond chance (a
  binomial tail under ``latency_significance``): a box that slows both variants is not
  the canary's doing. Until ``min_tail_answers`` of its answers lie beyond the 99th
  percentile (500 answers), the quantile judged is the highest one they do support,
  ``1 - min_tail_answers / answers``: the p99 of 52 answers is their slowest one. Both
  because a shared box's stalls rolled good canaries back: one slow answer of 52, and
  5 of 91 over 50 ms against the champion's 4% with the box's load at 9 on 2 cores
  (the histogram's buckets double, so a quantile one bucket up is always 2x);
* **scores**: the population stability index between its score distribution and
  the champion's exceeds ``max_score_psi`` (0.25 is the usual "shifted" line), once
  both have ``min_scores`` scores.

Latency and scores wait for ``min_answers``/``min_scores``; errors never wait.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# (upper bound, cumulative count) pairs of a Prometheus histogram, +Inf last.
Buckets = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Guards:
    max_error_rate: float = 0.001
    max_p99_s: float = 0.050
    latency_margin: float = 1.5
    max_score_psi: float = 0.25
    min_answers: int = 50
    min_tail_answers: int = 5
    latency_significance: float = 0.001
    # PSI over 20 bins carries sampling noise of about 19 * (1/n1 + 1/n2): with 200 scores
    # a side that is 0.19, near the 0.25 line; with 2,000 it is 0.02.
    min_scores: int = 2000


@dataclass(frozen=True)
class VariantFigures:
    """One variant's counters: totals from a scrape, or a window's differences."""

    answers: Mapping[str, float] = field(default_factory=dict)  # outcome → count
    latency: Buckets = ()
    scores: Buckets = ()

    @property
    def total(self) -> float:
        return sum(self.answers.values())

    @property
    def model_errors(self) -> float:
        return self.answers.get("model_error", 0.0)

    def __sub__(self, earlier: VariantFigures) -> VariantFigures:
        return VariantFigures(
            {k: v - earlier.answers.get(k, 0.0) for k, v in self.answers.items()},
            _minus(self.latency, earlier.latency),
            _minus(self.scores, earlier.scores),
        )


def _minus(now: Buckets, before: Buckets) -> Buckets:
    if not before:
        return now
    earlier = dict(before)
    return tuple((le, count - earlier.get(le, 0.0)) for le, count in now)


@dataclass(frozen=True)
class Breach:
    check: str  # error_rate, latency_p99, score_shift: the canary-breach alert's label
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


def quantile(buckets: Buckets, q: float) -> float:
    """The upper bound of the bucket holding the ``q`` quantile (NaN without counts).

    The bound, not an interpolation: a guard should not pass a p99 that may be over it.
    """
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    for le, count in buckets:
        if count >= rank:
            return le
    return math.inf


def psi(expected: Buckets, actual: Buckets, floor: float = 1e-4) -> float:
    """Population stability index of two cumulative histograms over the same bounds."""
    e, a = _shares(expected), _shares(actual)
    if not e or not a:
        return math.nan
    total = 0.0
    for pe, pa in zip(e, a, strict=True):
        pe, pa = max(pe, floor), max(pa, floor)
        total += (pa - pe) * math.log(pa / pe)
    return total


def _shares(buckets: Buckets) -> list[float]:
    cumulative = _counts(buckets)
    counts = [c - p for p, c in itertools.pairwise((0.0, *cumulative))]
    n = sum(counts)
    return [c / n for c in counts] if n > 0 else []


def _counts(buckets: Buckets) -> tuple[float, ...]:
    return tuple(count for _, count in buckets)


def judge(canary: VariantFigures, champion: VariantFigures, guards: Guards) -> Breach | None:
    """The first guard the canary breaks over a window, or None."""
    if canary.total and canary.model_errors / canary.total > guards.max_error_rate:
        rate = canary.model_errors / canary.total
        return Breach(
            "error_rate",
            f"{canary.model_errors:g} of {canary.total:g} answers failed by the model "
            f"({rate:.2%} > {guards.max_error_rate:.2%})",
        )
    if canary.total >= guards.min_answers:
        q = min(0.99, 1 - guards.min_tail_answers / canary.total)
        tail, base = quantile(canary.latency, q), quantile(champion.latency, q)
        slow, slow_base = slow_share(canary, guards), slow_share(champion, guards)
        over_base = math.isnan(slow_base) or (
            binomial_tail(round(slow * canary.total), round(canary.total),
                          min(1.0, slow_base * guards.latency_margin))
            < guards.latency_significance
        )  # fmt: skip
        if tail > guards.max_p99_s and over_base:
            return Breach(
                "latency_p99",
                f"p{q * 100:.3g} {tail * 1000:g} ms > {guards.max_p99_s * 1000:g} ms, "
                f"{slow:.1%} of {canary.total:g} answers slower (champion {base * 1000:g} ms, "
                f"{slow_base:.1%})",
            )
    scored = (_last(canary.scores), _last(champion.scores))
    if min(scored) >= guards.min_scores:
        shift = psi(champion.scores, canary.scores)
        if shift > guards.max_score_psi:
            return Breach("score_shift", f"score PSI {shift:.3f} > {guards.max_score_psi}")
    return None


def slow_share(figures: VariantFigures, guards: Guards) -> float:
    """The share of answers slower than ``max_p99_s`` (NaN without answers)."""
    total = _last(figures.latency)
    if total <= 0:
        return math.nan
    within = max((count for le, count in figures.latency if le <= guards.max_p99_s), default=0.0)
    return (total - within) / total


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), in log space (n in the thousands is fine)."""
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * log_p
        + (n - i) * log_q
        for i in range(k, n + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def _last(buckets: Buckets) -> float:
    return buckets[-1][1] if buckets else 0.0


def summary(figures: VariantFigures) -> str:
    p99 = quantile(figures.latency, 0.99)
    return (
        f"{figures.total:g} answers, {figures.model_errors:g} model errors, "
        f"p99 {'-' if math.isnan(p99) else f'{p99 * 1000:g} ms'}"
    )


def parse_steps(text: str) -> list[float]:
    """``"1,5,25,50,100"`` → shares in percent: rising, within (0, 100], ending at 100."""
    try:
        steps = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--steps {text!r}: comma-separated percentages") from None
    if not steps or steps[-1] != 100 or any(not 0 < s <= 100 for s in steps):
        raise ValueError(f"--steps {text!r}: percentages in (0, 100] ending at 100")
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError(f"--steps {text!r}: each step above the one before")
    return steps


def parse_duration_s(text: str) -> float:
    """``"60s"``, ``"2m"``, ``"500ms"`` or plain seconds."""
    units: Sequence[tuple[str, float]] = (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0))
    for suffix, scale in units:
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * scale
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (60s, 2m, 500ms)") from None
