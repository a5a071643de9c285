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
    # The latency split where the worker made the answer (its produced_at): request
    # appended -> answer made, and answer made -> answer appended (delivery).
    made_ms: dict[str, float] = field(default_factory=dict)
    delivered_ms: dict[str, float] = field(default_factory=dict)
    # request→answer of the requests sent after the first WARM_UP_MS of the run: the
    # loop as a service that has been running (JIT-compiled JVMs, warm caches).
    warm_latency_ms: dict[str, float] = field(default_factory=dict)
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
# The demo starts every JVM (broker, feature job) cold, and their compilers take both
# cores for the first 20-30 s of load (measured with per-process CPU samples): what a
# deployment sees after a restart, not while it runs. Its p99 is printed apart.
WARM_UP_MS = 30_000


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


def after_warm_up(
    sent_and_latency: Sequence[tuple[int, float]], warm_up_ms: int = WARM_UP_MS
) -> list[float]:
    """The latencies of the requests sent ``warm_up_ms`` or more after the first one."""
    if not sent_and_latency:
        return []
    start = min(sent for sent, _ in sent_and_latency)
    return [float(latency) for sent, latency in sent_and_latency if sent >= start + warm_up_ms]


def judge(asked: Sequence[Asked], answered: Sequence[Answered]) -> LoopOutcome:
    sent = {a.request.request_id: a for a in asked}
    counts = Counter(a.recommendation.request_id for a in answered)
    first: dict[str, Answered] = {}
    for answer in answered:
        first.setdefault(answer.recommendation.request_id, answer)
    matched = [(sent[rid], answer) for rid, answer in first.items() if rid in sent]
    # (sent, request→answer) of each answered request: the spread, per slice, once warm.
    timed = [(ask.sent_ms, float(answer.received_ms - ask.sent_ms)) for ask, answer in matched]
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
        latency_ms=percentiles([latency for _, latency in timed]),
        warm_latency_ms=percentiles(after_warm_up(timed)),
        made_ms=percentiles([a.recommendation.produced_at - ask.sent_ms for ask, a in matched]),
        delivered_ms=percentiles(
            [a.received_ms - a.recommendation.produced_at for _, a in matched]
        ),
        feature_age_ms=percentiles(ages),
        routes=Counter(item.route for rec in recs for item in rec.items),
        degraded_reasons=Counter(reason for rec in recs for reason in rec.degraded_reasons),
        trigger_features=Counter(rec.trigger_features for rec in recs if rec.trigger_features),
        p99_by_slice_ms=p99_by_slice(timed, SLICE_MS),
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
        (f"  after the first {WARM_UP_MS // 1000} s", spread(outcome.warm_latency_ms)),
        ("  of which request→made", spread(outcome.made_ms)),
        ("  and made→delivered", spread(outcome.delivered_ms)),
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


def outcome_result(outcome: LoopOutcome) -> str:
    """The RESULT line of a run: the whole run's request→answer spread, the warm p99 and
    the error rate in percent (``make RECORD=1 demo`` keeps it in docs/results.jsonl)."""
    latency = outcome.latency_ms
    figures = [f"{k}_ms={latency[k]:.0f}" for k in ("p50", "p95", "p99") if k in latency]
    if "p99" in outcome.warm_latency_ms:
        figures.append(f"warm_p99_ms={outcome.warm_latency_ms['p99']:.0f}")
    figures.append(f"error_rate_pct={outcome.error_rate * 100:.4f}")
    figures.append(f"requests={outcome.requests}")
    return "RESULT " + " ".join(figures)
