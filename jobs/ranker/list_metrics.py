"""Quality of whole answers on replayed requests: what ``make eval-online`` measures (pure).

Each request's candidates are scored, turned into the answer the worker would send
(``schemas.final_list.finalize``: bought items out, three per category, the new-item
quota) and compared with what the user touched next. hit@10: any answer touched;
NDCG@10: discounted hits over the best possible with that many true items;
new-item hit@10: a hit among the items the user had never touched, over the
requests that have such an item next. Requests with no next item say nothing and
are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jobs.ranker.store_replay import ReplayedRequest
from schemas.final_list import Scored, finalize

K = 10
MAX_PER_CATEGORY = 3


def answer(
    request: ReplayedRequest, scores: Sequence[float], min_new: int, k: int = K
) -> list[int]:
    scored = [
        Scored(c.item_id, float(s), c.route, category)
        for c, s, category in zip(request.candidates, scores, request.categories, strict=True)
    ]
    final = finalize(
        scored, k, request.excluded, (), MAX_PER_CATEGORY, touched=request.touched, min_new=min_new
    )
    return [item.item_id for item in final]


@dataclass(frozen=True)
class PerRequest:
    """Each judged request's hit and NDCG; new-item hits where a new item came next."""

    hits: npt.NDArray[np.float64]
    ndcg: npt.NDArray[np.float64]
    new_hits: npt.NDArray[np.float64]  # NaN where nothing new came next

    def summary(self) -> dict[str, float]:
        judged_new = ~np.isnan(self.new_hits)
        return {
            "hit_at_10": float(self.hits.mean()) if len(self.hits) else 0.0,
            "ndcg_at_10": float(self.ndcg.mean()) if len(self.ndcg) else 0.0,
            "new_item_hit_at_10": float(self.new_hits[judged_new].mean())
            if judged_new.any()
            else 0.0,
            "requests": float(len(self.hits)),
        }


def judge(
    requests: Sequence[ReplayedRequest], scores: Sequence[Sequence[float]], min_new: int
) -> PerRequest:
    return _judged(
        (request, answer(request, row, min_new))
        for request, row in zip(requests, scores, strict=True)
        if request.truth
    )


def judge_fixed(requests: Sequence[ReplayedRequest], items: Sequence[int]) -> PerRequest:
    """The same answer for every request (``popular``: the model's popular list)."""
    top = list(items[:K])
    return _judged((request, top) for request in requests if request.truth)


def _judged(answered: Iterable[tuple[ReplayedRequest, Sequence[int]]]) -> PerRequest:
    """hit@K, NDCG@K and new-item hit@K of each (request with truth, its top items)."""
    hits, gains, new_hits = [], [], []
    for request, top in answered:
        relevant = [item in request.truth for item in top]
        ideal = sum(1.0 / math.log2(r + 2) for r in range(min(K, len(request.truth))))
        hits.append(float(any(relevant)))
        gains.append(sum(1.0 / math.log2(r + 2) for r, hit in enumerate(relevant) if hit) / ideal)
        new = request.new_truth
        new_hits.append(float(any(item in new for item in top)) if new else math.nan)
    return PerRequest(np.asarray(hits), np.asarray(gains), np.asarray(new_hits))


def paired_ratio_interval(
    ours: npt.NDArray[np.float64], theirs: npt.NDArray[np.float64], draws: int = 2000, seed: int = 7
) -> tuple[float, float, float]:
    """``mean(ours) / mean(theirs)`` and its paired bootstrap 95% interval (same requests
    resampled for both)."""
    if len(ours) == 0 or theirs.sum() == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(ours), size=(draws, len(ours)))
    ratios = ours[picks].mean(axis=1) / np.maximum(theirs[picks].mean(axis=1), 1e-12)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(ours.mean() / theirs.mean()), float(low), float(high)
