"""What the demo's loop produced, judged against what was asked (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from schemas.records import Recommendation, RecRequest


@dataclass(frozen=True)
class Asked:
    """A request as produced, with the Kafka timestamp it was appended with."""

    request: RecRequest
    sent_ms: int


@dataclass(frozen=True)
class Answered:
    """A recommendation as consumed, with the Kafka timestamp it was appended with."""

    recommendation: Recommendation
    received_ms: int


@dataclass
class LoopOutcome:
    requests: int
    answered: int
    missing: int
    duplicated: int
    unknown: int
    degraded: int
    latency_ms: dict[str, float]
    feature_age_ms: dict[str, float]
    routes: Counter[str] = field(default_factory=Counter)
    degraded_reasons: Counter[str] = field(default_factory=Counter)
    # Answers by whether their features included the trigger (store, folded, missing).
    trigger_features: Counter[str] = field(default_factory=Counter)
    # p99 of the requests sent in each SLICE_MS of the run, in order: where the tail sits.
    p99_by_slice_ms: list[float] = field(default_factory=list)

    @property
    def error_rate(self) -> float:
        """Share of requests not answered, or answered degraded (a fallback made them)."""
        if not self.requests:
            return 0.0
        return (self.missing + self.degraded) / self.requests

    @property
    def exact(self) -> bool:
        """Every request answered exactly once, and nothing answered that was not asked."""
        return self.missing == 0 and self.duplicated == 0 and self.unknown == 0


def percentiles(values: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """Nearest-rank percentiles; empty input gives an empty dict."""
    ordered = sorted(values)
    if not ordered:
        return {}
    last = len(ordered) - 1
    return {f"p{p}": float(ordered[min(last, round(p / 100 * last))]) for p in points}


SLICE_MS = 10_000


def p99_by_slice(sent_and_latency: Sequence[tuple[int, float]], slice_ms: int) -> list[float]:
    """The p99 latency of the requests sent in each ``slice_ms`` from the first send
    (an empty slice is left out)."""
    if not sent_and_latency:
        return []
    start = min(sent for sent, _ in sent_and_latency)
    slices: dict[int, list[float]] = {}
    for sent, latency in sent_and_latency:
        slices.setdefault((sent - start) // slice_ms, []).append(latency)
    return [percentiles(slices[k], (99,))["p99"] for k in sorted(slices)]


def judge(asked: Sequence[Asked], answered: Sequence[Answered]) -> LoopOutcome:
    sent = {a.request.request_id: a for a in asked}
    counts = Counter(a.recommendation.request_id for a in answered)
    first: dict[str, Answered] = {}
    for answer in answered:
        first.setdefault(answer.recommendation.request_id, answer)
    matched = [(sent[rid], answer) for rid, answer in first.items() if rid in sent]
    latency = [answer.received_ms - ask.sent_ms for ask, answer in matched]
    ages = [
        answer.recommendation.produced_at - answer.recommendation.features_at
        for _, answer in matched
        if answer.recommendation.features_at is not None
    ]
    recs = [answer.recommendation for _, answer in matched]
    return LoopOutcome(
        requests=len(sent),
        answered=len(matched),
        missing=len(sent.keys() - counts.keys()),
        duplicated=sum(n - 1 for n in counts.values()),
        unknown=len(counts.keys() - sent.keys()),
        degraded=sum(rec.degraded for rec in recs),
        latency_ms=percentiles(latency),
        feature_age_ms=percentiles(ages),
        routes=Counter(item.route for rec in recs for item in rec.items),
        degraded_reasons=Counter(reason for rec in recs for reason in rec.degraded_reasons),
        trigger_features=Counter(rec.trigger_features for rec in recs if rec.trigger_features),
        p99_by_slice_ms=p99_by_slice(
            [(ask.sent_ms, answer.received_ms - ask.sent_ms) for ask, answer in matched],
            SLICE_MS,
        ),
    )


def outcome_lines(outcome: LoopOutcome) -> list[str]:
    def spread(values: dict[str, float]) -> str:
        return " ".join(f"{k}={v:.0f}" for k, v in values.items()) or "n/a"

    rows = [
        ("requests produced / answered", f"{outcome.requests} / {outcome.answered}"),
        ("missing / duplicated / unknown",
         f"{outcome.missing} / {outcome.duplicated} / {outcome.unknown}"),
        ("degraded answers", str(outcome.degraded)),
        ("error rate (missing + degraded)", f"{outcome.error_rate:.4%}"),
        ("request→answer ms", spread(outcome.latency_ms)),
        (f"p99 ms per {SLICE_MS // 1000} s of the run",
         " ".join(f"{v:.0f}" for v in outcome.p99_by_slice_ms) or "n/a"),
        ("feature age at answer ms", spread(outcome.feature_age_ms)),
        ("trigger click in features",
         ", ".join(f"{r}={n}" for r, n in outcome.trigger_features.most_common()) or "n/a"),
        ("items by recall route",
         ", ".join(f"{r}={n}" for r, n in outcome.routes.most_common()) or "none"),
    ]  # fmt: skip
    if outcome.degraded_reasons:
        reasons = ", ".join(f"{r}={n}" for r, n in outcome.degraded_reasons.most_common())
        rows.append(("degraded because", reasons))
    return [f"{label:<32}{value}" for label, value in rows]
