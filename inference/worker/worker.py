"""The worker's loop: the next batch is polled and prepared while the current one is scored.

At-least-once (default): batch N+1 is polled, its features read and candidates
recalled in a thread while batch N is scored on Triton, post-processed,
delivered and committed; batches are delivered in order, and each commits only
its own offsets. Batch N+1 keeps gathering requests while N is being scored
(up to the batch size), so batches grow with the load and a busy ranker gets
fewer, fuller requests; with ``prepare_ahead`` it stops gathering in time to be
prepared by when N is expected to be scored (:mod:`inference.worker.gather`).
With ``overlap_delivery``, N+1 is scored while N's answers
are still being flushed; N+1's are delivered only after N's are durable, and not at
all if N's fail, so no offset is committed past an undelivered answer. At most one
delivery is in flight behind the batch being scored. Exactly-once: one batch at a
time, each a Kafka transaction, so a rebalance never falls between a batch's output
and its offsets.

Metrics (:mod:`inference.worker.metrics`): every stage of :data:`STAGES` is observed
once per batch with requests, and only its work; the poll's wait for a first request
counts as idle time. A request's end-to-end latency runs from when it entered Kafka to
its answer being delivered: its record's broker append time (the requests topic is
created with ``LogAppendTime``); on a ``CreateTime`` topic the producer's time only if
it is not after the poll and at most ``CREATE_TIME_MAX_AGE_MS`` (5 min) before it, the
poll time otherwise (:mod:`inference.worker.arrival`). The request's ``ts`` is event
time, which a replay sets years back: its lag has a histogram of its own.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.worker.arrival import message_start_ms
from inference.worker.artifacts import ModelArtifacts
from inference.worker.deadline import appended_ms, late_positions
from inference.worker.errors import DeliveryStuck
from inference.worker.features import FeatureReader
from inference.worker.gather import GatherClock
from inference.worker.index_reload import IndexReloader
from inference.worker.instance import InstanceClaim, claim_instance
from inference.worker.inventory import inventory_key
from inference.worker.kafka_io import Polled, RecommendationSink, RequestStream
from inference.worker.metrics import NO_VARIANT, WorkerMetrics
from inference.worker.prepare import BatchPreparer, PreparedBatch
from inference.worker.rank import MODEL_FAILURES, Ranker, recommendations
from inference.worker.routing import NO_SPLIT, RoutingWatcher
from inference.worker.scoring import (
    Breaker,
    OnnxScorer,
    RecentFirstScorer,
    RouteOrderScorer,
    Scorer,
    TritonScorer,
)
from inference.worker.settings import WorkerSettings
from inference.worker.stuck import unless_stuck
from inference.worker.warm_up import popular_click, warm_up, warm_up_sizes
from runtime.online.connect import OnlineClient, connect
from schemas.codec import request_codec, wall_clock_ms
from schemas.model_files import MANIFEST_FILE
from schemas.records import Recommendation
from schemas.routing import Routing, RoutingAck, ack_key, encode_ack, routing_key

logger = logging.getLogger(__name__)


def beats_recall_order(model_dir: Path) -> bool:
    """False only when the model's manifest says training found it worse than recall."""
    try:
        manifest = json.loads((model_dir / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return True  # no manifest to read: the scorer's own checks speak
    return manifest.get("beats_recall_order") is not False


@dataclass
class Stats:
    batches: int = 0
    requests: int = 0
    refused: int = 0
    degraded: int = 0


def build_scorer(settings: WorkerSettings) -> Scorer:
    if not beats_recall_order(settings.model_dir):
        # Training measured the model below the order it re-ranks: answers keep the
        # recall order, and their model_version says so (ROUTE_ORDER_VERSION).
        logger.warning(
            "%s: the model does not beat the recall order (manifest.json); answering in "
            "recall order",
            settings.model_dir,
        )
        return RouteOrderScorer()
    if settings.scorer == "onnx":
        return OnnxScorer(settings.model_dir)
    if settings.scorer == "none":
        return RouteOrderScorer()
    if settings.scorer == "recent-first":
        return RecentFirstScorer()
    return TritonScorer(
        settings.triton_url,
        settings.triton_model,
        settings.triton_timeout_ms / 1000,
        settings.max_inflight,
        settings.triton_tls_ca,
    )


def redis_client(settings: WorkerSettings, url: str) -> OnlineClient:
    """A client of ``url`` whose every call fails within ``redis_timeout_ms``.

    No retries, stated rather than inherited: redis-py 6 retries three times with a
    backoff of up to seconds by default, which would hold a batch far past its budget
    while Redis is down or stopped. The breaker, not the client, decides when to retry.
    """
    timeout = settings.redis_timeout_ms / 1000
    return connect(url, fail_fast=True, socket_timeout=timeout, socket_connect_timeout=timeout)


class Worker:
    def __init__(
        self, settings: WorkerSettings, artifacts: ModelArtifacts, metrics: WorkerMetrics
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.stats = Stats()
        self._unreadable: collections.Counter[str] = collections.Counter()
        reader = FeatureReader(
            redis_client(settings, settings.redis_read_url or settings.redis_url),
            settings.project,
            inventory_key(settings.project),
            on_unreadable=self._unreadable_row,
        )
        self.preparer = BatchPreparer(settings, artifacts, reader, metrics)
        self.stream = RequestStream(
            settings.kafka,
            settings.requests_topic,
            settings.group_id,
            request_codec(),
            settings.exactly_once,
            settings.session_timeout_ms,
        )
        self._instance: InstanceClaim | None = None
        self.sink = RecommendationSink(
            settings.kafka,
            settings.output_topic,
            settings.group_id,
            self._transactional_id() if settings.exactly_once else None,
            settings.transaction_timeout_ms,
            settings.delivery_timeout_ms,
        )
        self.popular = artifacts.popular_items
        self.routing = self._routing_watcher()
        self.index_reload = (
            IndexReloader(
                settings.model_dir,
                artifacts,
                self.preparer.build_index,
                self.preparer.swap_index,
                settings.recall_reload_poll_ms,
            )
            if settings.recall_reload_poll_ms
            else None
        )
        self.scorer: Scorer | None = None
        # From a batch's hand-over until it is scored, the next batch gathers.
        self._gather = GatherClock(settings.prepare_ahead)

    def _routing_watcher(self) -> RoutingWatcher | None:
        # A version split needs Triton; the in-process scorers have one version only.
        if not self.settings.routing_poll_ms or self.settings.scorer != "triton":
            return None
        # The split is read from the primary: a replica's copy may lag a rollout's step.
        client = redis_client(self.settings, self.settings.redis_url)
        key = routing_key(self.settings.project, self.settings.triton_model)

        def read() -> bytes | None:
            value: bytes | None = client.get(key)  # type: ignore[assignment]
            return value

        acks = ack_key(self.settings.project, self.settings.triton_model)
        # Long enough to outlive any poll: the hash goes only when no worker is left.
        ttl_ms = max(60_000, 10 * self.settings.routing_poll_ms)
        worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"

        def report(ack: RoutingAck) -> None:
            pipe = client.pipeline(transaction=False)
            pipe.hset(acks, worker, encode_ack(ack))  # type: ignore[arg-type]
            pipe.pexpire(acks, ttl_ms)
            pipe.execute()

        def forget() -> None:
            client.hdel(acks, worker)

        return RoutingWatcher(
            read,
            self.settings.routing_poll_ms,
            self._routing_changed,
            report=report,
            worker=worker,
            forget=forget,
        )

    def _routing_changed(self, routing: Routing | None) -> None:
        shares = self.metrics.routing_share
        shares.clear()
        for variant in routing.variants if routing is not None else []:
            shares.labels(variant.name, str(variant.version), variant.registry_version).set(
                variant.share_pct
            )

    def _transactional_id(self) -> str:
        """The configured id, or this host's lowest free slot of the group's default ids."""
        if self.settings.transactional_id:
            return self.settings.transactional_id
        lock_dir = self.settings.instance_lock_dir
        self._instance = claim_instance(
            self.settings.group_id, Path(lock_dir) if lock_dir else None
        )
        logger.info("transactional id %s", self._instance.transactional_id)
        return self._instance.transactional_id

    async def run(self, stop: asyncio.Event) -> None:
        # gRPC's asyncio channel belongs to the loop it is created on: build it here.
        self.scorer = build_scorer(self.settings)
        breaker = Breaker(self.settings.retry_after_ms / 1000)
        self.ranker = Ranker(
            self.scorer, breaker, self.settings.users_per_request, self.popular, self.metrics
        )
        if self.routing is not None:
            self.routing.start()
        if self.index_reload is not None:
            self.index_reload.start()
        scoring: asyncio.Task[list[Recommendation]] | None = None
        delivering: collections.deque[asyncio.Task[None]] = collections.deque()
        # Deliveries that may still be in flight as the next batch is handed over.
        ahead = 1 if self.settings.overlap_delivery and not self.settings.exactly_once else 0
        appeared: asyncio.Task[None] | None = None
        try:
            servable = await self._servable(stop)
            await self._warm_up()
            # Not servable yet: watched in the background; the warm-up runs again between
            # batches as soon as the model appears, before the requests that follow it.
            if not servable:
                appeared = asyncio.create_task(self._until_servable(stop))
            logger.info("polling %s", self.settings.requests_topic)  # readiness, in the log
            while not stop.is_set():
                if appeared is not None and appeared.done():
                    appeared = None
                    await self._warm_up("the model is servable now")
                polled, prepared = await asyncio.to_thread(self._poll_and_prepare)
                if scoring is not None:
                    await scoring  # one batch is scored at a time
                    scoring = None
                # In order; a failed delivery raises here. An idle worker settles them all.
                while len(delivering) > (ahead if len(polled) else 0):
                    await delivering.popleft()
                if not len(polled):
                    continue
                if prepared is not None:
                    # Set before the next poll's thread starts, not when the task first
                    # runs: that thread could otherwise ask before the task had begun,
                    # and the next batch would stop gathering while this one scores.
                    self._gather.handed_over()
                scoring = asyncio.create_task(self._score(prepared, polled))
                previous = delivering[-1] if delivering else None
                delivering.append(asyncio.create_task(self._deliver(polled, scoring, previous)))
                if self.settings.exactly_once:
                    await delivering.popleft()
                    scoring = None
            while delivering:
                await delivering.popleft()
        except DeliveryStuck:
            raise  # closing would wait on the blocked client as well
        except BaseException:
            if appeared is not None:
                appeared.cancel()
            await _settled(scoring, *delivering)
            await self._close()
            raise
        if appeared is not None:
            appeared.cancel()
        await self._close()

    async def _servable(self, stop: asyncio.Event) -> bool:
        """Wait up to ``warm_up_wait_ms`` for Triton to have the model ready; whether it has.
        The in-process scorers always have theirs."""
        if not isinstance(self.scorer, TritonScorer) or not self.settings.warm_up_batches:
            return True
        if await self.scorer.ready():
            return True
        wait_s = self.settings.warm_up_wait_ms / 1000
        logger.info("waiting up to %g s for Triton to serve %s before warming up",
                    wait_s, self.settings.triton_model)  # fmt: skip
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not stop.is_set():
            await asyncio.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            if await self.scorer.ready():
                return True
        logger.warning("%s not servable after %g s: polling anyway, warming up once it is",
                       self.settings.triton_model, wait_s)  # fmt: skip
        return False

    async def _until_servable(self, stop: asyncio.Event) -> None:
        assert isinstance(self.scorer, TritonScorer)
        while not stop.is_set() and not await self.scorer.ready():
            await asyncio.sleep(0.5)

    async def _warm_up(self, why: str = "") -> None:
        """Made-up batches through the whole path before the first poll (see warm_up.py)."""
        if not self.settings.warm_up_batches or self.scorer is None:
            return
        unseen = WorkerMetrics()  # the warm-up's counts stay out of the worker's
        breaker = Breaker(self.settings.retry_after_ms / 1000)
        ranker = Ranker(self.scorer, breaker, self.settings.users_per_request, self.popular, unseen)
        warmed = await warm_up(
            self.preparer.twin(unseen),
            ranker,
            warm_up_sizes(self.settings.warm_up_batches, self.settings.batch_size),
            popular_click(self.preparer.artifacts, wall_clock_ms()),
            self.settings.max_per_category,
        )
        (logger.warning if warmed.failures else logger.info)(
            "warmed up%s: %s", f" ({why})" if why else "", warmed.line()
        )

    def _poll_and_prepare(self) -> tuple[Polled, PreparedBatch | None]:
        start = time.perf_counter()
        polled = self.stream.poll(
            self.settings.batch_size,
            self.settings.batch_timeout_ms / 1000,
            self._gather.gather_left,
        )
        took = time.perf_counter() - start
        m = self.metrics
        m.idle_seconds.inc(polled.idle_s)
        if polled.kafka_errors:
            m.errors.labels("kafka").inc(polled.kafka_errors)
        if not len(polled):
            return polled, None  # nothing to answer: all of it was waiting
        m.stage_seconds.labels("poll").observe(max(0.0, took - polled.idle_s - polled.decode_s))
        m.stage_seconds.labels("decode").observe(polled.decode_s)
        if not polled.records:
            return polled, None
        start = time.perf_counter()
        prepared = self.preparer.prepare([record for _, record in polled.records])
        self._gather.prepared(time.perf_counter() - start)
        for stage, seconds in prepared.stage_seconds.items():
            m.stage_seconds.labels(stage).observe(seconds)
        return polled, prepared

    async def _score(self, prepared: PreparedBatch | None, polled: Polled) -> list[Recommendation]:
        if prepared is None:
            return []  # nothing but refused messages: their dead letters go out alone
        start = time.perf_counter()
        try:  # the gather clock was told when this batch was handed over
            appended = [appended_ms(message) for message, _ in polled.records]
            late = late_positions(appended, wall_clock_ms(), self.settings.deadline_ms)
            # Taken, and released once scored: until then this worker's acknowledgement
            # names the view's versions, and no controller unloads them.
            view = self.routing.acquire() if self.routing is not None else NO_SPLIT
            try:
                ranked = await self.ranker.rank(prepared, late, view)
            finally:
                if self.routing is not None:
                    self.routing.release(view)
        finally:
            self._gather.scored()
        self.metrics.stage_seconds.labels("rank").observe(time.perf_counter() - start)
        start = time.perf_counter()
        recs = recommendations(
            prepared,
            ranked,
            self.settings.max_per_category,
            wall_clock_ms(),
            self.settings.min_new_items,
        )
        self.metrics.stage_seconds.labels("postprocess").observe(time.perf_counter() - start)
        return recs

    async def _deliver(
        self,
        polled: Polled,
        scoring: asyncio.Task[list[Recommendation]],
        previous: asyncio.Task[None] | None,
    ) -> None:
        """The batch's answers and dead letters made durable, then its offsets handed back:
        after the batch before it, whose failure stops this one from committing past it."""
        recs = await scoring
        if previous is not None:
            await previous
        delivery = asyncio.to_thread(self.sink.deliver, recs, polled, self.stream)
        # The sink gives up by itself after the delivery timeout; a call of it still
        # running well past its own timeout is blocked inside librdkafka for good.
        stages = await unless_stuck(
            delivery, self.sink.clock, self.settings.delivery_timeout_ms / 1000
        )
        for stage, seconds in stages.items():  # produce, commit
            self.metrics.stage_seconds.labels(stage).observe(seconds)
        self._count(polled, recs)

    def _unreadable_row(self, view: str, error: Exception) -> None:
        self.metrics.unreadable_rows.labels(view).inc()
        self._unreadable[view] += 1
        seen = self._unreadable[view]
        if seen & (seen - 1) == 0:  # the 1st, 2nd, 4th, 8th...: visible, never a flood
            logger.warning("unreadable %s row read as absent (%d so far): %s", view, seen, error)

    def _count(self, polled: Polled, recs: list[Recommendation]) -> None:
        now = wall_clock_ms()
        m = self.metrics
        m.batch_size.observe(len(polled.records))
        m.requests.inc(len(polled.records))
        for _message, error in polled.refused:
            m.dead_letters.labels(error.kind).inc()
        polled_ms = polled.received_ms or now
        entered_at = {}
        for message, request in polled.records:
            entered, origin = message_start_ms(message, polled_ms)
            m.latency_origin.labels(origin).inc()
            m.end_to_end_seconds.observe(max(0, now - entered) / 1000)
            m.event_lag_seconds.observe(max(0, now - request.ts) / 1000)
            entered_at[request.request_id] = entered
        for rec in recs:
            m.recommendations.labels(str(rec.degraded).lower()).inc()
            self._count_variant(rec, (now - entered_at.get(rec.request_id, now)) / 1000)
            if rec.features_at is not None:
                m.feature_age_seconds.observe(max(0, rec.produced_at - rec.features_at) / 1000)
            for reason in rec.degraded_reasons:
                m.fallbacks.labels(reason).inc()
            self.stats.degraded += rec.degraded
        self.stats.batches += 1
        self.stats.requests += len(polled.records)
        self.stats.refused += len(polled.refused)

    def _count_variant(self, rec: Recommendation, seconds: float) -> None:
        m, variant = self.metrics, rec.variant or NO_VARIANT
        if rec.rerouted_from is not None:
            outcome = "rerouted"
        elif not rec.degraded:
            outcome = "ok"
            for item in rec.items:
                m.variant_scores.labels(variant).observe(item.score)
        elif MODEL_FAILURES.intersection(rec.degraded_reasons):
            outcome = "model_error"
        else:
            outcome = "degraded"
        m.variant_answers.labels(variant, outcome).inc()
        m.variant_seconds.labels(variant).observe(max(0.0, seconds))

    async def _close(self) -> None:
        if self.routing is not None:
            self.routing.stop()
        if self.index_reload is not None:
            self.index_reload.stop()
        try:
            if self.scorer is not None:
                await self.scorer.close()
        finally:
            self.sink.close()
            self.stream.close()
            if self._instance is not None:
                self._instance.release()
            logger.info(
                "stopped after %d batches, %d requests, %d refused, %d degraded",
                self.stats.batches, self.stats.requests, self.stats.refused, self.stats.degraded,
            )  # fmt: skip


async def _settled(*tasks: asyncio.Task[Any] | None) -> None:
    """Wait for the tasks still running, their outcomes already known or beside the point.

    After a failure the batches behind it fail too (a delivery waits on the one before
    it) or are abandoned unanswered and uncommitted, so a restart replays them. Waiting
    rather than cancelling: a delivery's thread cannot be cancelled, and closing the
    producer under it would lose what it holds.
    """
    running = [task for task in tasks if task is not None]
    await asyncio.gather(*running, return_exceptions=True)
