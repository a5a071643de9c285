"""Every Prometheus metric the worker exposes (names are what dashboards query).

All names start with ``streamrec_worker_``. Latency histograms are in seconds.
``stage`` is one of :data:`STAGES`; ``reason`` of a fallback is one of
:data:`FALLBACK_REASONS`. Metrics live in their own registry so that several
workers (or tests) in one process do not collide on the default one.
"""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from schemas.metrics_server import LOOPBACK, serve_registry

STAGES = ("poll", "decode", "features", "recall", "rank", "postprocess", "produce", "commit")
FALLBACK_REASONS = (
    "triton_unavailable", "triton_timeout", "ranker_bad_output", "redis_unavailable",
    "no_candidates", "deadline_exceeded",
)  # fmt: skip

# Sub-millisecond to multi-second: a stage is about 1 ms, a timed-out call is seconds.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# Scores are click probabilities: twenty bins, so two variants' distributions compare.
SCORE_BUCKETS = tuple(round(0.05 * n, 2) for n in range(1, 21))
# A variant's answers: scored by its model, failed by its model (timeout, unavailable,
# bad output: what a canary is judged on), or degraded by something else (Redis, deadline).
VARIANT_OUTCOMES = ("ok", "model_error", "degraded")
# The label of answers given outside any traffic split.
NO_VARIANT = "default"
# Feature rows are seconds old when fresh; windows close every 5 minutes, so older is common.
AGE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)


class WorkerMetrics:
    """The worker's metrics, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.stage_seconds = Histogram(
            "streamrec_worker_stage_seconds",
            "Time one micro-batch spends in a stage.",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.end_to_end_seconds = Histogram(
            "streamrec_worker_end_to_end_seconds",
            "Request time (its ts) to recommendation produced.",
            buckets=LATENCY_BUCKETS,
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
            "Errors by the component that failed (kafka, redis, triton, internal).",
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
        self.variant_answers = Counter(
            "streamrec_worker_variant_answers",
            f"Answers per traffic-split variant ({NO_VARIANT} without a split), by outcome "
            f"({', '.join(VARIANT_OUTCOMES)}).",
            ["variant", "outcome"],
            registry=r,
        )
        self.variant_seconds = Histogram(
            "streamrec_worker_variant_seconds",
            "Request time (its ts) to recommendation produced, per variant.",
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


def serve(metrics: WorkerMetrics, port: int, addr: str = LOOPBACK) -> WSGIServer | None:
    """Expose ``/metrics`` on ``addr``:``port`` (0 = do not serve; loopback by default)."""
    return serve_registry(metrics.registry, port, addr)
