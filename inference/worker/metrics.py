"""Every Prometheus metric the worker exposes (names are what dashboards query).

All names start with ``streamrec_worker_``. Latency histograms are in seconds.
``stage`` is one of :data:`STAGES`; ``reason`` of a fallback is one of
:data:`FALLBACK_REASONS`. Metrics live in their own registry so that several
workers (or tests) in one process do not collide on the default one.

Every labelled counter whose label values are known in advance exists at 0 from
start (:meth:`WorkerMetrics._known_labels`): a series that first appears already at
1 reads as no increase to ``rate()``, so the first incident of a kind would not show.

End-to-end latency starts when the request entered Kafka (its record's broker append
time; :mod:`inference.worker.arrival`), not at its ``ts``, which is event time and
reads years on a replay: that lag is ``streamrec_worker_request_event_lag_seconds``.
Stages are work: each is observed once per batch with requests; the poll's waiting
for requests to arrive is ``streamrec_worker_idle_seconds_total``, in no stage.
"""

from __future__ import annotations

from typing import get_args
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from inference.worker.arrival import CREATE_TIME_MAX_AGE_MS, ORIGINS
from runtime.metrics_server import LOOPBACK, serve_registry
from schemas.errors import INVALID_RECORD_KINDS
from schemas.records import TriggerFeatures
from schemas.views import CATEGORY_TRENDS, ITEM_TRENDS, USER_CLICK_WINDOW, USER_RECENT_CLICKS

# poll: the gathering of a batch from its first request on (waiting for that first one is
# idle time); decode: the requests' JSON; produce: answers and dead letters sent (and, at
# least once, flushed); commit: the offsets handed over (at least once: stored for the
# background commit) or sent and committed in the batch's transaction (exactly once).
STAGES = ("poll", "decode", "features", "recall", "rank", "postprocess", "produce", "commit")
FALLBACK_REASONS = (
    "triton_unavailable", "triton_timeout", "ranker_bad_output", "redis_unavailable",
    "no_candidates", "deadline_exceeded", "features_behind_trigger",
)  # fmt: skip
# kafka: the consumer's transient errors (librdkafka retries them); ranker_output: the
# ranker answered without usable scores (a wrong shape or dtype, a NaN).
ERROR_COMPONENTS = ("kafka", "redis", "triton", "ranker_output")
DEGRADED = ("true", "false")
# The feature reads counted per view: the four stored views and the co-visitation sets.
COVISIT_VIEW = "covisit"
STORED_VIEWS = tuple(v.name for v in (USER_RECENT_CLICKS, USER_CLICK_WINDOW, CATEGORY_TRENDS,
                                      ITEM_TRENDS))  # fmt: skip
LOOKUP_VIEWS = (*STORED_VIEWS, COVISIT_VIEW)
# The views whose rows the shared-rows cache serves (inference/worker/shared_rows.py).
SHARED_VIEWS = (CATEGORY_TRENDS.name, ITEM_TRENDS.name)
FRESH_WAIT_OUTCOMES = ("caught_up", "fruitless", "skipped")
TRIGGER_OUTCOMES: tuple[str, ...] = get_args(TriggerFeatures)

# Sub-millisecond to multi-second: a stage is about 1 ms, a timed-out call is seconds.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
# Event time runs from milliseconds (live) to years (a replay of old events).
EVENT_LAG_BUCKETS = (
    *LATENCY_BUCKETS, 30.0, 60.0, 300.0, 3600.0, 86_400.0, 604_800.0, 31_536_000.0,
)  # fmt: skip
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# Scores are click probabilities: twenty bins, so two variants' distributions compare.
SCORE_BUCKETS = tuple(round(0.05 * n, 2) for n in range(1, 21))
# A variant's answers: scored by its model, failed by its model (timeout, unavailable,
# bad output: what a canary is judged on), or degraded by something else (Redis, deadline).
# rerouted: the variant's version was not ready and Triton's default version answered
# (schemas.records.Recommendation.rerouted_from); neither the variant's score nor its error.
VARIANT_OUTCOMES = ("ok", "model_error", "degraded", "rerouted")
# The label of answers given outside any traffic split.
NO_VARIANT = "default"
# Feature rows are seconds old when fresh; windows close every 5 minutes, so older is common.
AGE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
_KAFKA_START = (
    "Kafka append (the request record's broker timestamp; streamrec_worker_latency_origin_total "
    "says when another start was used)"
)


class WorkerMetrics:
    """The worker's metrics, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.stage_seconds = Histogram(
            "streamrec_worker_stage_seconds",
            "Time one micro-batch spends in a stage (work only: one observation per batch "
            "with requests; waiting for requests is streamrec_worker_idle_seconds_total).",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.end_to_end_seconds = Histogram(
            "streamrec_worker_end_to_end_seconds",
            f"{_KAFKA_START} to recommendation produced.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.latency_origin = Counter(
            "streamrec_worker_latency_origin",
            "Requests by where their end-to-end latency was measured from: log_append_time "
            "(the broker's clock), create_time (a CreateTime topic's producer clock, used when "
            f"not after the poll and at most {CREATE_TIME_MAX_AGE_MS // 1000} s before it), "
            "poll_time (neither usable: a lower bound).",
            ["origin"],
            registry=r,
        )
        self.event_lag_seconds = Histogram(
            "streamrec_worker_request_event_lag_seconds",
            "Request event time (its ts) to recommendation produced: event time, so it reads "
            "historical (years) on a replay of old events; not a latency.",
            buckets=EVENT_LAG_BUCKETS,
            registry=r,
        )
        self.idle_seconds = Counter(
            "streamrec_worker_idle_seconds",
            "Seconds the poll waited with no request to take (in no stage); rate() is the "
            "share of time the worker's input was idle.",
            registry=r,
        )
        self.feature_age_seconds = Histogram(
            "streamrec_worker_feature_age_seconds",
            "Age of the newest feature row an answer used (produced minus feature time).",
            buckets=AGE_BUCKETS,
            registry=r,
        )
        self.requests = Counter("streamrec_worker_requests", "Valid requests consumed.", registry=r)
        self.recommendations = Counter(
            "streamrec_worker_recommendations",
            "Recommendations delivered, by whether they were degraded.",
            ["degraded"],
            registry=r,
        )
        self.errors = Counter(
            "streamrec_worker_errors",
            f"Errors by the component that failed ({', '.join(ERROR_COMPONENTS)}).",
            ["component"],
            registry=r,
        )
        self.dead_letters = Counter(
            "streamrec_worker_dead_letters",
            "Requests sent to the dead-letter topic, by error kind.",
            ["kind"],
            registry=r,
        )
        self.feature_lookups = Counter(
            "streamrec_worker_feature_lookups",
            "Feature rows looked up, by view.",
            ["view"],
            registry=r,
        )
        self.feature_missing = Counter(
            "streamrec_worker_feature_missing",
            "Feature rows looked up but absent, by view (missing rate = missing / lookups).",
            ["view"],
            registry=r,
        )
        self.unreadable_rows = Counter(
            "streamrec_worker_unreadable_rows",
            "Feature rows whose stored bytes did not decode as their view's features (read "
            "as absent), by view.",
            ["view"],
            registry=r,
        )
        self.fresh_waits = Counter(
            "streamrec_worker_fresh_waits",
            "Batches behind their triggers: waits that caught one up, fruitless waits, and "
            "batches that skipped the wait while fruitless waits had shut it.",
            ["outcome"],
            registry=r,
        )
        self.shared_row_hits = Counter(
            "streamrec_worker_shared_row_hits",
            "Feature rows looked up and served from the shared-rows cache, by view.",
            ["view"],
            registry=r,
        )
        self.batch_size = Histogram(
            "streamrec_worker_batch_size",
            "Requests per micro-batch.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.candidates = Histogram(
            "streamrec_worker_candidates",
            "Candidates recalled per request.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.fallbacks = Counter(
            "streamrec_worker_fallbacks",
            "Requests answered by a fallback, by reason.",
            ["reason"],
            registry=r,
        )
        self.trigger_features = Counter(
            "streamrec_worker_trigger_features",
            "Requests with a trigger event, by whether the features included it "
            "(store, folded, missing).",
            ["outcome"],
            registry=r,
        )
        self.inflight = Gauge(
            "streamrec_worker_triton_inflight",
            "Ranker requests in flight (including those waiting for a slot).",
            registry=r,
        )
        self.rerouted = Counter(
            "streamrec_worker_rerouted",
            "Requests whose variant's version Triton had not ready, scored by its default "
            "version instead (flagged rerouted_from).",
            registry=r,
        )
        self.variant_answers = Counter(
            "streamrec_worker_variant_answers",
            f"Answers per traffic-split variant ({NO_VARIANT} without a split), by outcome "
            f"({', '.join(VARIANT_OUTCOMES)}).",
            ["variant", "outcome"],
            registry=r,
        )
        self.variant_seconds = Histogram(
            "streamrec_worker_variant_seconds",
            f"{_KAFKA_START} to recommendation produced, per variant.",
            ["variant"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.variant_scores = Histogram(
            "streamrec_worker_variant_scores",
            "Scores of the items answered by a variant's model (degraded answers excluded).",
            ["variant"],
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        self.routing_share = Gauge(
            "streamrec_worker_routing_share",
            "The traffic split in force: percent of users per variant and the version it asks "
            "for (absent without a split).",
            ["variant", "version", "registry_version"],
            registry=r,
        )
        self.up = Gauge(
            "streamrec_worker_dependency_up",
            "1 when the last call to a dependency (redis, triton) succeeded.",
            ["dependency"],
            registry=r,
        )
        self._known_labels()

    def _known_labels(self) -> None:
        """Create every series of a known label value at 0 (gauges excepted: 0 would say
        a dependency is down, or a split is in force)."""
        known: list[tuple[Counter | Histogram, tuple[tuple[str, ...], ...]]] = [
            (self.stage_seconds, _each(STAGES)),
            (self.recommendations, _each(DEGRADED)),
            (self.errors, _each(ERROR_COMPONENTS)),
            (self.dead_letters, _each(INVALID_RECORD_KINDS)),
            (self.feature_lookups, _each(LOOKUP_VIEWS)),
            (self.feature_missing, _each(LOOKUP_VIEWS)),
            (self.unreadable_rows, _each(STORED_VIEWS)),
            (self.shared_row_hits, _each(SHARED_VIEWS)),
            (self.fresh_waits, _each(FRESH_WAIT_OUTCOMES)),
            (self.fallbacks, _each(FALLBACK_REASONS)),
            (self.trigger_features, _each(TRIGGER_OUTCOMES)),
            (self.latency_origin, _each(ORIGINS)),
            (self.variant_answers, tuple((NO_VARIANT, o) for o in VARIANT_OUTCOMES)),
            (self.variant_seconds, _each((NO_VARIANT,))),
            (self.variant_scores, _each((NO_VARIANT,))),
        ]
        for metric, values in known:
            for labels in values:
                metric.labels(*labels)


def _each(values: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    return tuple((value,) for value in values)


def serve(metrics: WorkerMetrics, port: int, addr: str = LOOPBACK) -> WSGIServer | None:
    """Expose ``/metrics`` on ``addr``:``port`` (0 = do not serve; loopback by default)."""
    return serve_registry(metrics.registry, port, addr)
