"""The evaluation's table, plot and RESULT line, from answers and truth (pure but the plot)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jobs.evaluate.truth import Scores, Truth, score
from schemas.records import BehaviorEvent, Recommendation, TriggerFeatures

K = 10
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class VariantResult:
    name: str
    answered: int
    degraded: int
    any_item: Scores
    new_item: Scores


def ranked_lists(
    request_ids: Sequence[str], answers: Mapping[str, Recommendation]
) -> list[list[int] | None]:
    """Each request's recommended items in order; None where no answer came."""
    out: list[list[int] | None] = []
    for request_id in request_ids:
        rec = answers.get(request_id)
        out.append([i.item_id for i in rec.items] if rec is not None else None)
    return out


def evaluate_variant(
    name: str,
    request_ids: Sequence[str],
    truths: Sequence[Truth],
    answers: Mapping[str, Recommendation],
) -> VariantResult:
    lists = ranked_lists(request_ids, answers)
    answered = [answers[r] for r in request_ids if r in answers]
    return VariantResult(
        name,
        len(answered),
        sum(rec.degraded for rec in answered),
        score(lists, truths, K),
        score(lists, truths, K, new_only=True),
    )


def popular_result(popular: Sequence[int], truths: Sequence[Truth]) -> VariantResult:
    lists: list[list[int] | None] = [list(popular[:K])] * len(truths)
    return VariantResult(
        "popular", len(truths), 0, score(lists, truths, K), score(lists, truths, K, new_only=True)
    )


def fresh_share(answers: Mapping[str, Recommendation]) -> float:
    """Share of answers whose features included their trigger (from the store or folded in)."""
    verdicts = Counter(rec.trigger_features for rec in answers.values())
    asked = sum(verdicts.values())
    return (verdicts["store"] + verdicts["folded"]) / asked if asked else 0.0


def popular_share(answers: Mapping[str, Recommendation]) -> float:
    """Share of recommended items that came from the popular route."""
    routes = Counter(item.route for rec in answers.values() for item in rec.items)
    total = sum(routes.values())
    return routes["popular"] / total if total else 0.0


def table(results: Sequence[VariantResult]) -> list[str]:
    lines = [
        f"| variant | answers | degraded | hit@{K} | NDCG@{K} | new-item hit@{K} | "
        f"new-item NDCG@{K} |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.answered} | {r.degraded} | {r.any_item.hit:.4f} | "
            f"{r.any_item.ndcg:.4f} | {r.new_item.hit:.4f} | {r.new_item.ndcg:.4f} |"
        )
    return lines


def hourly_hits(
    lists: Sequence[Sequence[int] | None], truths: Sequence[Truth], times: Sequence[int],
    start_ms: int,
) -> dict[int, float]:  # fmt: skip
    """hit@K per hour of replayed event time (hours with a judged request only)."""
    buckets: dict[int, tuple[list[Sequence[int] | None], list[Truth]]] = {}
    for ranked, truth, ts in zip(lists, truths, times, strict=True):
        hour = (ts - start_ms) // HOUR_MS
        answers, wanted = buckets.setdefault(hour, ([], []))
        answers.append(ranked)
        wanted.append(truth)
    out = {}
    for hour, (answers, wanted) in sorted(buckets.items()):
        scores = score(answers, wanted, K)
        if scores.judged:
            out[hour] = scores.hit
    return out


def plot(series: Mapping[str, Mapping[int, float]], title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, points in series.items():
        hours = sorted(points)
        ax.plot(hours, [points[h] for h in hours], marker="o", markersize=3, label=name)
    ax.set_xlabel("hour of the replayed period (event time)")
    ax.set_ylabel(f"hit@{K}")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def result_line(
    results: Mapping[str, VariantResult],
    fresh: float,
    popular: float,
    answers: int,
    hit_ratio: tuple[float, float, float] | None = None,
) -> str:
    def hit(name: str) -> str:
        return f"{results[name].any_item.hit:.4f}" if name in results else "n/a"

    def ndcg(name: str) -> str:
        return f"{results[name].any_item.ndcg:.4f}" if name in results else "n/a"

    def new_hit(name: str) -> str:
        return f"{results[name].new_item.hit:.4f}" if name in results else "n/a"

    ratio, low, high = hit_ratio or (math.nan, math.nan, math.nan)
    return (
        f"RESULT hit_at_10={hit('stream')} ndcg_at_10={ndcg('stream')} "
        f"new_item_hit_at_10={new_hit('stream')} batch_hit_at_10={hit('batch')} "
        f"popular_hit_at_10={hit('popular')} popular_ndcg_at_10={ndcg('popular')} "
        f"norank_hit_at_10={hit('norank')} norank_ndcg_at_10={ndcg('norank')} "
        f"recent_first_hit_at_10={hit('recent-first')} "
        f"recent_first_ndcg_at_10={ndcg('recent-first')} "
        f"hit_ratio_vs_norank={ratio:.4f} hit_ratio_low={low:.4f} hit_ratio_high={high:.4f} "
        f"fresh_answers={fresh:.4f} popular_share={popular:.4f} answers={answers}"
    )


def paired_hit_ratio(
    ours: Sequence[float], theirs: Sequence[float], draws: int = 2000, seed: int = 7
) -> tuple[float, float, float]:
    """mean(ours) / mean(theirs) over the same requests, and its paired bootstrap 95%
    interval (the requests resampled together for both)."""
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if len(a) == 0 or b.sum() == 0:
        return math.nan, math.nan, math.nan
    picks = np.random.default_rng(seed).integers(0, len(a), size=(draws, len(a)))
    ratios = a[picks].mean(axis=1) / np.maximum(b[picks].mean(axis=1), 1e-12)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(a.mean() / b.mean()), float(low), float(high)


def side_by_side(
    replay: Sequence[BehaviorEvent],
    positions: Sequence[int],
    request_ids: Sequence[str],
    truths: Sequence[Truth],
    streaming: Mapping[str, Recommendation],
    batch: Mapping[str, Recommendation],
    users: int = 3,
    clicks: int = 5,
) -> list[str]:
    """For the first ``users`` judged requests whose user had ``clicks`` replayed clicks before:
    those clicks, the streaming answer, the batch answer and what the user did next.

    The first such requests in time, not the best ones: an honest sample.
    """
    lines: list[str] = []
    shown: set[int] = set()
    for position, request_id, truth in zip(positions, request_ids, truths, strict=True):
        event = replay[position]
        if event.user_id in shown or not truth.items:
            continue
        before = [e for e in replay[: position + 1] if e.user_id == event.user_id]
        if len(before) < clicks or request_id not in streaming or request_id not in batch:
            continue
        shown.add(event.user_id)

        lines += [
            f"user {event.user_id}, request {request_id}:",
            "  clicks   " + " ".join(f"{e.item_id}/{e.behavior}" for e in before[-clicks:]),
            "  stream   " + _marked(streaming[request_id], truth),
            "  batch    " + _marked(batch[request_id], truth),
            "  next     " + " ".join(str(i) for i in sorted(truth.items)),
        ]
        if len(shown) == users:
            break
    if lines:
        lines.append("(* = an item the user touched within the horizon)")
    return lines


def _marked(rec: Recommendation, truth: Truth) -> str:
    return " ".join(f"{i.item_id}{'*' if i.item_id in truth.items else ''}" for i in rec.items[:K])


def summary_record(
    results: Mapping[str, VariantResult],
    verdicts: Mapping[TriggerFeatures | None, int],
    fresh: float,
    share: float,
) -> dict[str, object]:
    """The figures of a run as plain data, for ``summary.json``."""
    return {
        "results": {
            name: {
                "answered": r.answered,
                "degraded": r.degraded,
                "hit_at_10": r.any_item.hit,
                "ndcg_at_10": r.any_item.ndcg,
                "new_hit_at_10": r.new_item.hit,
                "new_ndcg_at_10": r.new_item.ndcg,
                "judged": r.any_item.judged,
                "new_judged": r.new_item.judged,
            }
            for name, r in results.items()
        },
        "trigger_features": {str(k): n for k, n in verdicts.items()},
        "fresh_answers": fresh,
        "popular_share": share,
    }
