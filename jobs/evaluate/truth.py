"""What each user actually did next, and how well an answer guessed it (pure).

A request follows one event of a user at event time ``t``. Its truth is the
distinct items that user touched (any behaviour) in ``(t, t + horizon]`` of
event time; "new" items are those among them the user had not touched before
``t`` — in the training prefix or earlier in the replay. Requests whose truth
is empty say nothing about any answer and are left out of the averages (their
count is reported). Relevance is binary: hit@k is whether any of the first
``k`` items is in the truth, NDCG@k the discounted gain of the hits over the
best possible gain with that many true items.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schemas.records import BehaviorEvent


@dataclass(frozen=True)
class Truth:
    """What the user did next after one event: all next items, and the new ones among them."""

    items: frozenset[int]
    new_items: frozenset[int]


def next_items(
    prefix: Iterable[BehaviorEvent], replay: Sequence[BehaviorEvent], horizon_ms: int
) -> list[Truth]:
    """The truth after each event of ``replay`` (in its order; ``replay`` sorted by time)."""
    seen: dict[int, set[int]] = defaultdict(set)
    for event in prefix:
        seen[event.user_id].add(event.item_id)
    by_user: dict[int, list[int]] = defaultdict(list)  # positions in replay, time order
    for n, event in enumerate(replay):
        by_user[event.user_id].append(n)
    truths: list[Truth | None] = [None] * len(replay)
    for positions in by_user.values():
        for at, n in enumerate(positions):
            event = replay[n]
            ahead: set[int] = set()
            for m in positions[at + 1 :]:
                later = replay[m]
                if later.ts > event.ts + horizon_ms:
                    break
                if later.ts > event.ts:
                    ahead.add(later.item_id)
            before = seen[event.user_id] | {replay[m].item_id for m in positions[: at + 1]}
            truths[n] = Truth(frozenset(ahead), frozenset(ahead - before))
    return [t if t is not None else Truth(frozenset(), frozenset()) for t in truths]


def hit_at(ranked: Sequence[int], truth: frozenset[int], k: int) -> float:
    return 1.0 if any(item in truth for item in ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[int], truth: frozenset[int], k: int) -> float:
    if not truth:
        return 0.0
    gain = sum(1 / math.log2(rank + 2) for rank, item in enumerate(ranked[:k]) if item in truth)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(k, len(truth))))
    return gain / ideal


@dataclass(frozen=True)
class Scores:
    """Averages over the requests with a non-empty truth (``judged`` of them)."""

    hit: float
    ndcg: float
    judged: int


def per_request_hits(answers: Sequence[Sequence[int] | None], truths: Sequence[Truth],
                     k: int) -> list[float]:  # fmt: skip
    """hit@k of each judged request (a non-empty truth), in order; a missing answer is 0."""
    return [
        hit_at(ranked, truth.items, k) if ranked is not None else 0.0
        for ranked, truth in zip(answers, truths, strict=True)
        if truth.items
    ]


def score(answers: Sequence[Sequence[int] | None], truths: Sequence[Truth], k: int,
          new_only: bool = False) -> Scores:  # fmt: skip
    """Mean hit@k and NDCG@k; a missing answer (None) counts as a miss, never as left out."""
    hits, gains, judged = 0.0, 0.0, 0
    for ranked, truth in zip(answers, truths, strict=True):
        wanted = truth.new_items if new_only else truth.items
        if not wanted:
            continue
        judged += 1
        if ranked is not None:
            hits += hit_at(ranked, wanted, k)
            gains += ndcg_at(ranked, wanted, k)
    if not judged:
        return Scores(0.0, 0.0, 0)
    return Scores(hits / judged, gains / judged, judged)
