"""Score a prepared batch on the ranker, or fall back, and turn it into recommendations.

A batch is split into chunks of ``users_per_request`` users, sent concurrently
(the scorer bounds requests in flight); requests past their deadline
(:mod:`inference.worker.deadline`) skip the ranker and get the fallback at
once. A chunk the ranker cannot score in time gets the fallback ranking and
the reason; the breaker then keeps the ranker out
of the way for ``retry_after_ms`` so later batches answer at once.

Under a traffic split (:mod:`inference.worker.routing`) the users of each variant
are chunked apart and their requests ask Triton for the variant's version. Each
version has its own breaker: a failing canary sends its own users to the fallback
and leaves the champion's users on the ranker. A version Triton has no ready copy
of (being loaded or unloaded: not the model's failure) is asked again without a
version, so Triton's default (newest ready) version scores, and the answers say so
(``rerouted_from``); for ``retry_after_ms`` that version's users go there directly.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass

from inference.worker.deadline import DEADLINE_EXCEEDED
from inference.worker.errors import RankerTimeout, RankerUnavailable, VersionNotReady
from inference.worker.inputs import assemble, chunks, output_problem, split_scores
from inference.worker.metrics import WorkerMetrics
from inference.worker.postprocess import Scored, fallback_scores, finalize
from inference.worker.prepare import PreparedBatch, PreparedRequest
from inference.worker.routing import NO_SPLIT, RoutingView
from inference.worker.scoring import Breaker, Scorer
from schemas.ranking import CAND_ITEMS
from schemas.records import Recommendation
from schemas.routing import Variant

logger = logging.getLogger(__name__)
FALLBACK_VERSION = "fallback:trend-popularity"
TRITON_DOWN = "triton_unavailable"
TRITON_TIMEOUT = "triton_timeout"
# The ranker answered, but not with scores: a wrong shape or dtype (the whole chunk, and the
# breaker opens as for an outage) or a NaN/inf score (that user only).
BAD_OUTPUT = "ranker_bad_output"
# The reasons that are the model's own failure: what a variant (a canary) is judged on.
MODEL_FAILURES = frozenset({TRITON_DOWN, TRITON_TIMEOUT, BAD_OUTPUT})


@dataclass
class Ranked:
    scores: list[float]
    model_version: str
    reasons: list[str]
    variant: str = ""  # the split's variant that answered ("" without a split)
    registry_version: str = ""
    rerouted_from: int | None = None  # the variant's version, when another one scored


class Ranker:
    def __init__(
        self,
        scorer: Scorer,
        breaker: Breaker,
        users_per_request: int,
        popular: tuple[int, ...],
        metrics: WorkerMetrics,
    ) -> None:
        self.scorer = scorer
        self.breaker = breaker  # Triton's default version's; each split version gets its own
        self._version_breakers: dict[int, Breaker] = {}
        # Open for a version Triton said was not ready: its users go to the default one.
        self._not_ready: dict[int, Breaker] = {}
        self.users_per_request = users_per_request
        self.popular_rank = {item: rank for rank, item in enumerate(popular)}
        self.metrics = metrics

    async def rank(
        self,
        batch: PreparedBatch,
        late: frozenset[int] = frozenset(),
        routing: RoutingView = NO_SPLIT,
    ) -> list[Ranked]:
        """Each request's scores, in order; ``late`` positions get the fallback at once."""
        reqs = batch.requests
        out: list[Ranked | None] = [None] * len(reqs)
        variants = [routing.variant(r.request.user_id) for r in reqs]
        for n in late:
            out[n] = _labelled(self._fallback(batch, [reqs[n]], DEADLINE_EXCEEDED), variants[n])[0]
        by_variant: dict[Variant | None, list[int]] = {}
        for n in range(len(reqs)):
            if n not in late:
                by_variant.setdefault(variants[n], []).append(n)
        parts = [
            (variant, [positions[i] for i in p])
            for variant, positions in by_variant.items()
            for p in chunks(len(positions), self.users_per_request)
        ]
        results = await asyncio.gather(
            *(self._chunk(batch, [reqs[n] for n in part], variant) for variant, part in parts)
        )
        for (_, part), ranked in zip(parts, results, strict=True):
            for n, result in zip(part, ranked, strict=True):
                out[n] = result
        return [ranked for ranked in out if ranked is not None]

    def _breaker(self, variant: Variant | None) -> Breaker:
        if variant is None:
            return self.breaker
        if variant.version not in self._version_breakers:
            self._version_breakers[variant.version] = self.breaker.fresh()
        return self._version_breakers[variant.version]

    async def _chunk(
        self, batch: PreparedBatch, reqs: list[PreparedRequest], variant: Variant | None
    ) -> list[Ranked]:
        return _labelled(await self._score_chunk(batch, reqs, variant), variant)

    async def _score_chunk(
        self, batch: PreparedBatch, reqs: list[PreparedRequest], variant: Variant | None
    ) -> list[Ranked]:
        if variant is None:
            return await self._call(batch, reqs, None, self.breaker)
        gate = self._not_ready.setdefault(variant.version, self.breaker.fresh())
        if not gate.admits():
            return await self._rerouted(batch, reqs, variant.version)
        try:
            ranked = await self._call(batch, reqs, variant.version, self._breaker(variant))
        except VersionNotReady as exc:
            if gate.closed:
                logger.warning("%s; its users go to Triton's default version meanwhile", exc)
            gate.failed()
            return await self._rerouted(batch, reqs, variant.version)
        gate.succeeded()  # Triton has the version (whatever else the call met)
        return ranked

    async def _rerouted(
        self, batch: PreparedBatch, reqs: list[PreparedRequest], version: int
    ) -> list[Ranked]:
        """Scored by Triton's default version instead of ``version``, and flagged."""
        ranked = await self._call(batch, reqs, None, self.breaker)
        for result in ranked:
            if result.model_version != FALLBACK_VERSION:
                result.rerouted_from = version
                self.metrics.rerouted.inc()
        return ranked

    async def _call(
        self,
        batch: PreparedBatch,
        reqs: list[PreparedRequest],
        requested: int | None,
        breaker: Breaker,
    ) -> list[Ranked]:
        """The chunk scored by ``requested`` (None: the default version), or its fallback;
        VersionNotReady propagates: the caller asks another version."""
        if not breaker.admits():
            return self._fallback(batch, reqs, TRITON_DOWN)
        self.metrics.inflight.inc()
        inputs = assemble([r.model_input for r in reqs])
        try:
            scores, version = await self.scorer.score(inputs, requested)
        except VersionNotReady:
            raise
        except RankerTimeout as exc:
            self._failed(exc, breaker)
            return self._fallback(batch, reqs, TRITON_TIMEOUT)
        except RankerUnavailable as exc:
            self._failed(exc, breaker)
            return self._fallback(batch, reqs, TRITON_DOWN)
        finally:
            self.metrics.inflight.dec()
        if problem := output_problem(scores, inputs[CAND_ITEMS].shape):
            self._failed(
                RankerUnavailable(f"{version} answered {problem}"), breaker, "ranker_output"
            )
            return self._fallback(batch, reqs, BAD_OUTPUT)
        breaker.succeeded()
        self.metrics.up.labels("triton").set(1)
        per_user = split_scores(scores, [len(r.candidates) for r in reqs])
        return [
            Ranked(s, version, [])
            if all(map(math.isfinite, s))
            else self._non_finite(batch, req, version)
            for req, s in zip(reqs, per_user, strict=True)
        ]

    def _non_finite(self, batch: PreparedBatch, req: PreparedRequest, version: str) -> Ranked:
        self.metrics.errors.labels("ranker_output").inc()
        logger.warning(
            "%s gave a non-finite score for request %s; it gets the fallback ranking",
            version, req.request.request_id,
        )  # fmt: skip
        return self._fallback(batch, [req], BAD_OUTPUT)[0]

    def _failed(self, exc: Exception, breaker: Breaker, component: str = "triton") -> None:
        if breaker.closed:
            logger.warning("ranker failed (%s); fallback ranking until it answers again", exc)
        breaker.failed()
        self.metrics.errors.labels(component).inc()
        self.metrics.up.labels("triton").set(0)

    def _fallback(
        self, batch: PreparedBatch, reqs: list[PreparedRequest], reason: str
    ) -> list[Ranked]:
        out = []
        for req in reqs:
            trend = [batch.items[c.item_id].trend_score if c.item_id in batch.items else 0.0
                     for c in req.candidates]  # fmt: skip
            routes = [c.route for c in req.candidates]
            ranks = [self.popular_rank.get(c.item_id) for c in req.candidates]
            out.append(Ranked(fallback_scores(trend, routes, ranks), FALLBACK_VERSION, [reason]))
        return out


def _labelled(ranked: list[Ranked], variant: Variant | None) -> list[Ranked]:
    if variant is not None:
        for result in ranked:
            result.variant = variant.name
            result.registry_version = variant.registry_version
    return ranked


def recommendations(
    batch: PreparedBatch,
    ranked: list[Ranked],
    max_per_category: int,
    now_ms: int,
    min_new_items: int = 0,
) -> list[Recommendation]:
    """Post-process each request's scored candidates into its answer (pure)."""
    out = []
    for req, result in zip(batch.requests, ranked, strict=True):
        columns = zip(req.candidates, result.scores, req.categories, strict=True)
        scored = [Scored(c.item_id, score, c.route, cat) for c, score, cat in columns]
        items = finalize(
            scored,
            req.request.k,
            excluded=req.user.excluded,
            out_of_stock=batch.out_of_stock,
            max_per_category=max_per_category,
            touched=req.touched,
            min_new=min_new_items,
        )
        reasons = sorted(set(req.reasons + result.reasons))
        out.append(
            Recommendation(
                request_id=req.request.request_id,
                user_id=req.request.user_id,
                items=items,
                model_version=result.model_version,
                features_at=req.user.features_at,
                produced_at=now_ms,
                degraded=bool(reasons),
                degraded_reasons=reasons,
                trigger_features=req.trigger_features,
                variant=result.variant,
                registry_version=result.registry_version,
                rerouted_from=result.rerouted_from,
            )
        )
    return out
