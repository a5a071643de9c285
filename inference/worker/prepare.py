"""A micro-batch from requests to ranker inputs: features, recall, candidate features.

:class:`BatchPreparer` is the synchronous half of the worker (Redis and Faiss);
it runs in a thread while the event loop scores the previous batch on Triton.
When Redis fails, the batch goes on with what it has (request candidates,
popular items, no filters from Redis) and says so in ``degraded_reasons``.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import redis

from inference.worker.artifacts import ModelArtifacts
from inference.worker.features import (
    FeatureReader,
    ItemFeatures,
    Row,
    UserFeatures,
    item_features,
    top_items,
    user_features,
)
from inference.worker.freshness import (
    TRIGGER_MISSING,
    WaitGate,
    behind,
    wait_for_triggers,
    with_triggers,
)
from inference.worker.inputs import UserInput
from inference.worker.item_index import IndexChoice
from inference.worker.metrics import WorkerMetrics
from inference.worker.recall import EmbeddingIndex
from inference.worker.scoring import Breaker
from inference.worker.settings import WorkerSettings
from inference.worker.shared_rows import SharedRows
from schemas.candidates import HistoryTouch, RequestState, candidate_input
from schemas.online.history import fold_fresh_touches
from schemas.ranking import ITEM_DENSE_FEATURES
from schemas.recall import (
    Candidate,
    covisit_items,
    covisit_totals,
    merge_routes,
    own_items,
    recent_categories,
    recent_items,
    trend_items,
    user_routes,
)
from schemas.records import RecRequest, Route, TriggerFeatures
from schemas.windows import SEQUENCE_LIMIT

logger = logging.getLogger(__name__)
REDIS_DOWN = "redis_unavailable"
NO_CANDIDATES = "no_candidates"


@dataclass
class PreparedRequest:
    request: RecRequest
    user: UserFeatures
    candidates: list[Candidate]
    model_input: UserInput
    categories: list[int]  # raw category of each candidate, 0 = unknown
    reasons: list[str] = field(default_factory=list)
    trigger_features: TriggerFeatures | None = None
    # The user's own items (fresh view and history): the new-item quota counts the rest.
    touched: frozenset[int] = frozenset()


@dataclass(frozen=True)
class UserRoutes:
    """What the store-backed routes found for one user."""

    trend: list[int] = field(default_factory=list)
    covisit: list[int] = field(default_factory=list)
    covisit_scores: dict[int, float] = field(default_factory=dict)
    history: list[HistoryTouch] = field(default_factory=list)


@dataclass
class PreparedBatch:
    requests: list[PreparedRequest]
    items: dict[int, ItemFeatures]
    out_of_stock: set[int]
    stage_seconds: dict[str, float] = field(default_factory=dict)


class BatchPreparer:
    def __init__(
        self,
        settings: WorkerSettings,
        artifacts: ModelArtifacts,
        reader: FeatureReader,
        metrics: WorkerMetrics,
    ) -> None:
        self.settings = settings
        self.artifacts = artifacts
        self.reader = reader
        self.metrics = metrics
        self.index = self.build_index(artifacts)
        self.redis_breaker = Breaker(settings.retry_after_ms / 1000)
        shared_ttl_s = settings.shared_rows_ttl_ms / 1000
        self.item_rows: SharedRows[int, ItemFeatures] = SharedRows(shared_ttl_s)
        self.category_rows: SharedRows[int, Row | None] = SharedRows(shared_ttl_s)
        self._popular = list(artifacts.popular_items[: settings.popular_candidates])
        self.fresh_gate = WaitGate(settings.fresh_wait_give_up)

    def twin(self, metrics: WorkerMetrics) -> BatchPreparer:
        """This preparer's reader, index and row caches, counting into ``metrics``.

        Its breaker and fresh-wait gate are its own, so what the twin meets (a warm-up's
        batches) neither opens this preparer's breaker nor shuts its gate.
        """
        twin = copy.copy(self)
        twin.metrics = metrics
        twin.redis_breaker = Breaker(self.settings.retry_after_ms / 1000)
        twin.fresh_gate = WaitGate(self.settings.fresh_wait_give_up)
        return twin

    def build_index(self, artifacts: ModelArtifacts) -> EmbeddingIndex:
        choice = IndexChoice(self.settings.recall_index, self.settings.recall_search)
        return EmbeddingIndex(
            artifacts.item_embeddings, artifacts.vocab.item_ids, artifacts.item_categories, choice
        )

    def swap_index(self, index: EmbeddingIndex) -> None:
        # One attribute store: a batch already searching keeps the index it read.
        self.index = index

    def prepare(self, requests: Sequence[RecRequest]) -> PreparedBatch:
        timings: dict[str, float] = {}
        start = time.perf_counter()
        users, trigger_outcomes, redis_ok = self._users(requests)
        clicks = [self.artifacts.vocab.item_index(u.items) for u in users]
        timings["features"] = time.perf_counter() - start
        start = time.perf_counter()
        click_categories = [u.categories for u in users]
        embedding = self.index.search(clicks, self.settings.embedding_candidates, click_categories)
        routes = self._routes(users) if redis_ok else None
        redis_ok = redis_ok and routes is not None
        found = routes or [UserRoutes() for _ in users]
        recall = [
            user_routes(
                req.candidates,
                emb,
                got.trend,
                self._popular,
                covisit=got.covisit,
                recent=own_items(
                    user.items,
                    [touch.item_id for touch in got.history],
                    self.settings.recent_candidates,
                    user.excluded,
                ),
            )
            for req, user, emb, got in zip(requests, users, embedding, found, strict=True)
        ]
        candidates = [
            merge_routes(lists, limit=self.settings.max_candidates, min_count=2 * req.k)
            for req, lists in zip(requests, recall, strict=True)
        ]
        timings["recall"] = time.perf_counter() - start
        for cands in candidates:
            self.metrics.candidates.observe(len(cands))
        start = time.perf_counter()
        wanted = sorted({c.item_id for cands in candidates for c in cands})
        items, out_of_stock = self._items(wanted) if redis_ok else (None, set())
        redis_ok = redis_ok and items is not None
        items = items if items is not None else {}
        timings["features"] += time.perf_counter() - start
        prepared = []
        columns = zip(requests, users, candidates, recall, found, trigger_outcomes, strict=True)
        for req, user, cands, lists, got, outcome in columns:
            reasons = [] if redis_ok else [REDIS_DOWN]
            if not cands:
                reasons.append(NO_CANDIDATES)
            if outcome == "missing":
                reasons.append(TRIGGER_MISSING)
            state = request_state(req, user, lists, got, self.settings.max_candidates)
            model_input, categories = self._model_input(user, state, cands, items)
            touched = frozenset(user.items) | {touch.item_id for touch in got.history}
            prepared.append(
                PreparedRequest(
                    req, user, cands, model_input, categories, reasons, outcome, touched
                )
            )
        return PreparedBatch(prepared, items, out_of_stock, timings)

    def _users(
        self, requests: Sequence[RecRequest]
    ) -> tuple[list[UserFeatures], list[TriggerFeatures | None], bool]:
        """The users' features, each with its trigger (see :mod:`inference.worker.freshness`)."""
        ids = [r.user_id for r in requests]
        users = [UserFeatures(user_id) for user_id in ids]
        # Until the store says otherwise, every trigger is lacking from it.
        lacking = [n for n, r in enumerate(requests) if r.trigger is not None]
        read_ok = False
        if self.redis_breaker.admits():
            try:
                recent, window = self.reader.users(ids)
                self._count_lookups("user_recent_clicks", recent)
                self._count_lookups("user_click_window", window)
                lacking = self._wait_for_triggers(requests, recent, window)
                excluded = self.settings.excluded_behaviors
                users = [
                    user_features(i, r, w, excluded)
                    for i, r, w in zip(ids, recent, window, strict=True)
                ]
                read_ok = True
            except redis.RedisError as exc:
                self._redis_failed(exc)
        users, outcomes = with_triggers(
            requests,
            users,
            lacking,
            self.settings.fold_trigger,
            SEQUENCE_LIMIT,
            self.settings.excluded_behaviors,
        )
        for outcome in outcomes:
            if outcome is not None:
                self.metrics.trigger_features.labels(outcome).inc()
        return users, outcomes, read_ok

    def _wait_for_triggers(
        self,
        requests: Sequence[RecRequest],
        recent: list[Row | None],
        window: list[Row | None],
    ) -> list[int]:
        """Positions still behind their trigger after waiting, if the gate lets the batch wait."""
        first = behind(requests, recent, window)
        if not first or not self.settings.fresh_wait_ms:
            return first
        if not self.fresh_gate.open:
            self.metrics.fresh_waits.labels("skipped").inc()
            return first
        wait_s = self.settings.fresh_wait_ms / 1000
        lacking = wait_for_triggers(
            self.reader.users, requests, recent, window, wait_s, pending=first
        )
        caught_up = len(first) - len(lacking)
        self.fresh_gate.record(caught_up)
        self.metrics.fresh_waits.labels("caught_up" if caught_up else "fruitless").inc()
        return lacking

    def _routes(self, users: Sequence[UserFeatures]) -> list[UserRoutes] | None:
        """Each user's trend, co-visit and history reads, from one round trip; None when
        Redis failed.

        Trends: the top items of the user's recent categories (rows shared across
        batches through the cache). Co-visit: what other users clicked next to the
        user's last clicks; items the model never saw come out too, and rank with
        the OOV embedding and the category of their trends row (``_model_input``).
        History: the user's own items of the last days, for the ``recent`` route.
        """
        categories = [recent_categories(u.categories) for u in users]
        wanted_categories = sorted({c for cats in categories for c in cats})
        cached, missing = self.category_rows.split(wanted_categories)
        limit = self.settings.covisit_candidates
        clicks = [recent_items(u.items, self.settings.covisit_clicks) for u in users]
        wanted_items = sorted({i for items in clicks for i in items}) if limit else []
        user_ids = [u.user_id for u in users] if self.settings.recent_candidates else []
        try:
            fetched, lists, histories = self.reader.routes_and_histories(
                missing, wanted_items, limit, user_ids
            )
        except redis.RedisError as exc:
            self._redis_failed(exc)
            return None
        self.category_rows.fill(cached, missing, fetched)
        self._count_shared("category_trends", len(wanted_categories) - len(missing))
        self._count_lookups("category_trends", fetched)
        self._count_lookups("covisit", [found or None for found in lists])
        tops = {c: top_items(cached[c]) for c in wanted_categories}
        found = dict(zip(wanted_items, lists, strict=True))
        trend_limit = self.settings.trend_candidates
        histories = histories or [[] for _ in users]
        out = []
        for user, cats, items, history in zip(users, categories, clicks, histories, strict=True):
            neighbours = [found[i] for i in items if i in found]
            out.append(
                UserRoutes(
                    trend=trend_items([tops[c] for c in cats], trend_limit),
                    covisit=covisit_items(neighbours, limit, user.excluded),
                    covisit_scores=covisit_totals(neighbours, user.excluded),
                    history=fold_fresh_touches(history, user.items, user.event_ts),
                )
            )
        return out

    def _items(self, wanted: list[int]) -> tuple[dict[int, ItemFeatures] | None, set[int]]:
        """The candidates' item features (shared ones from the cache) and the out-of-stock
        ones among them (always from Redis), in one round trip."""
        items, missing = self.item_rows.split(wanted)
        try:
            rows, stock = self.reader.items(missing, stock_of=wanted)
        except redis.RedisError as exc:
            self._redis_failed(exc)
            return None, set()
        self.redis_breaker.succeeded()
        self.metrics.up.labels("redis").set(1)
        self._count_shared("item_trends", len(wanted) - len(missing))
        self._count_lookups("item_trends", rows)
        self.item_rows.fill(items, missing, [item_features(row) for row in rows])
        return items, {i for i, out in zip(wanted, stock, strict=True) if out}

    def _model_input(
        self,
        user: UserFeatures,
        state: RequestState,
        cands: Sequence[Candidate],
        items: dict[int, ItemFeatures],
    ) -> tuple[UserInput, list[int]]:
        """The ranker's inputs for one request: ``schemas.candidates.candidate_input``,
        which training computes its rows with too."""
        art = self.artifacts
        cand_ids = [c.item_id for c in cands]
        zero = [0.0] * len(ITEM_DENSE_FEATURES)
        dense = np.asarray(
            [items[i].dense if i in items else zero for i in cand_ids], dtype=np.float32
        ).reshape(len(cand_ids), len(ITEM_DENSE_FEATURES))
        row_categories = [items[i].category_id if i in items else 0 for i in cand_ids]
        given = candidate_input(
            state, cand_ids, art.item_categories, row_categories, dense, user.dense, art.vocab
        )
        model_input = UserInput(
            seq_items=given.seq_items,
            seq_cats=given.seq_cats,
            user_dense=user.dense,
            cand_items=given.cand_items,
            cand_cats=given.cand_cats,
            cand_dense=given.cand_dense,
        )
        return model_input, given.categories

    def _redis_failed(self, exc: Exception) -> None:
        if self.redis_breaker.closed:
            logger.warning("Redis failed (%s); answering from what the worker has", exc)
        self.redis_breaker.failed()
        self.metrics.errors.labels("redis").inc()
        self.metrics.up.labels("redis").set(0)

    def _count_shared(self, view: str, hits: int) -> None:
        self.metrics.shared_row_hits.labels(view).inc(hits)

    def _count_lookups(self, view: str, rows: Sequence[object]) -> None:
        self.metrics.feature_lookups.labels(view).inc(len(rows))
        self.metrics.feature_missing.labels(view).inc(sum(1 for r in rows if r is None))


def request_state(
    request: RecRequest,
    user: UserFeatures,
    routes: dict[Route, Sequence[int]],
    found: UserRoutes,
    candidate_limit: int,
) -> RequestState:
    """What the candidate features read of one request (pure). Its time is the trigger's
    (the event that prompted it), else the user's latest event: features are about event
    time, as in training, never the worker's clock."""
    latest = max(user.event_ts, default=0)
    now = request.trigger.ts if request.trigger is not None else latest
    return RequestState(
        now_ms=now,
        items=user.items,
        categories=user.categories,
        behaviors=user.behaviors,
        event_ts=user.event_ts,
        history=found.history,
        routes=routes,
        covisit_scores=found.covisit_scores,
        candidate_limit=candidate_limit,
    )
