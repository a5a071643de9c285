"""A worker's first batches, run on made-up requests before it polls for real ones.

A worker process starts cold. Its first Redis reads open the pool's connections,
its first Triton calls meet model instances that have not run yet, and every
Python path of the batch runs for the first time. In ``make demo`` the requests of
the first half second after a start took 165 ms on average against 12 ms a
second later: features 19.5 ms a batch against 1.5-2, the ranker's compute
11 ms against 1.2.

So before its first poll the worker runs the whole path on made-up batches of
1, 2, 4, ... requests: features, recall, the ranker, post-processing. Each
request is for :data:`WARM_UP_USER`, whom no event stream reaches, and carries a
click on the most popular item as its trigger, so that the click is folded in
and the embedding, trend and co-visit routes all search. The warm-up only reads:
nothing is written to Redis, nothing is delivered to Kafka, and its counts go to
metrics of its own, not the worker's.

A dependency that fails ends the warm-up at once and is logged. The real
batches then meet that dependency through the worker's own breakers, as they
would have without a warm-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from inference.worker.artifacts import ModelArtifacts
from inference.worker.prepare import REDIS_DOWN, BatchPreparer
from inference.worker.rank import MODEL_FAILURES, Ranker, recommendations
from schemas.codec import wall_clock_ms
from schemas.records import MAX_SAFE_INT, BehaviorEvent, RecRequest

WARM_UP_USER = MAX_SAFE_INT
# The answers' reasons that mean a dependency failed (not a lacking feature).
FAILURES = frozenset({REDIS_DOWN, *MODEL_FAILURES})


def warm_up_sizes(batches: int, batch_size: int) -> list[int]:
    """``batches`` batch sizes doubling from 1, none above ``batch_size`` (pure)."""
    return [min(2**n, batch_size) for n in range(batches)]


def warm_up_requests(size: int, trigger: BehaviorEvent | None) -> list[RecRequest]:
    """``size`` requests for the warm-up user, each prompted by ``trigger`` (pure)."""
    ts = trigger.ts if trigger else 1
    return [RecRequest(f"warm-up-{n}", WARM_UP_USER, ts, trigger=trigger) for n in range(size)]


def popular_click(artifacts: ModelArtifacts, now_ms: int) -> BehaviorEvent | None:
    """The warm-up user's click on the most popular item (None when the model has none)."""
    if not artifacts.popular_items:
        return None
    item = artifacts.popular_items[0]
    category = int(artifacts.category_of(artifacts.vocab.item_index([item]))[0])
    return BehaviorEvent(WARM_UP_USER, item, max(1, category), "pv", now_ms)


@dataclass(frozen=True)
class WarmedUp:
    """What a warm-up ran, and the failure that ended it early, if one did."""

    batches: int
    requests: int
    seconds: float
    failures: tuple[str, ...] = ()

    def line(self) -> str:
        ran = f"{self.batches} batches, {self.requests} requests in {self.seconds * 1000:.0f} ms"
        if self.failures:
            return f"{ran}; stopped: {', '.join(self.failures)}"
        return ran


async def warm_up(
    preparer: BatchPreparer,
    ranker: Ranker,
    sizes: Sequence[int],
    trigger: BehaviorEvent | None,
    max_per_category: int,
) -> WarmedUp:
    """Run each batch of ``sizes`` through ``preparer`` and ``ranker``; discard the answers."""
    start = time.perf_counter()
    batches = requests = 0
    for size in sizes:
        prepared = await asyncio.to_thread(preparer.prepare, warm_up_requests(size, trigger))
        ranked = await ranker.rank(prepared)
        answers = recommendations(prepared, ranked, max_per_category, wall_clock_ms())
        batches, requests = batches + 1, requests + size
        failed = sorted(FAILURES.intersection(r for a in answers for r in a.degraded_reasons))
        if failed:
            return WarmedUp(batches, requests, time.perf_counter() - start, tuple(failed))
    return WarmedUp(batches, requests, time.perf_counter() - start)
