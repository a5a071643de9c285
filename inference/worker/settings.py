"""The worker's one frozen settings object: environment first, command-line flags over it.

Every field is read the way :mod:`runtime.settings` reads them; ``streamrec-worker
--help`` lists each variable with its default.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from inference.worker.errors import SettingsError
from runtime.kafka import KafkaSettings
from runtime.settings import (
    DEFAULT_MODEL_DIR,
    ENV_PREFIX,
    MODEL_DIR_ENV,
    Settings,
    group,
    redis_url_setting,
    setting,
    variables,
)
from schemas.final_list import MIN_NEW_ITEMS
from schemas.records import BEHAVIORS
from schemas.topics import REC_REQUESTS, RECOMMENDATIONS
from schemas.views import PROJECT

WORKER_PREFIX = ENV_PREFIX + "WORKER_"
# none: the recall merge order; recent-first: the user's own items by recency, then that
# order (the heuristics a ranker must beat, make eval-online).
SCORERS = ("triton", "onnx", "none", "recent-first")
LOG_LEVEL_ENV = ENV_PREFIX + "LOG_LEVEL"


@dataclass(frozen=True)
class WorkerSettings(Settings):
    """Where requests come from and answers go, where features and the ranker are, and limits."""

    error = SettingsError

    kafka: KafkaSettings = group(KafkaSettings)
    requests_topic: str = setting(
        REC_REQUESTS, env="STREAMREC_WORKER_REQUESTS_TOPIC", help="topic of recommendation requests"
    )
    output_topic: str = setting(
        RECOMMENDATIONS, env="STREAMREC_WORKER_OUTPUT_TOPIC", help="topic the answers go to"
    )
    group_id: str = setting(
        "streamrec-worker", env="STREAMREC_WORKER_GROUP_ID", help="consumer group"
    )
    # Shared names without the WORKER_ part: every process reads the same variable.
    redis_url: str = redis_url_setting()
    # Feature reads (users, trends, co-visits, stock) from a replica of the online store.
    # The primary fsyncs its AOF before it answers anything (appendfsync always), once per
    # pass of its one thread that wrote, and the feature writer keeps it writing: a read
    # there queues behind those fsyncs. A replica applies the same writes without them.
    redis_read_url: str = setting(
        "",
        env="STREAMREC_WORKER_REDIS_READ_URL",
        help="Redis the worker reads features from, such as a replica",
        secret=True,
        shown="the online store",
    )
    # The Feast project of feature_store.yaml; online keys are namespaced by it.
    project: str = setting(PROJECT, env="STREAMREC_WORKER_PROJECT", help="Feast project")
    triton_url: str = setting(
        "127.0.0.1:8001", env="STREAMREC_TRITON_URL", help="Triton gRPC host:port"
    )
    triton_model: str = setting(
        "ranker", env="STREAMREC_TRITON_MODEL", help="served model (ranker_python locally)"
    )
    # Set: gRPC over TLS, trusting only this CA (the secured stack's <home>/secrets/ca.pem).
    triton_tls_ca: str = setting(
        "", env="STREAMREC_TRITON_TLS_CA", help="CA file for Triton's gRPC TLS", shown="plaintext"
    )
    model_dir: Path = setting(
        DEFAULT_MODEL_DIR, env=MODEL_DIR_ENV, help="the trained ranker's folder (vocab, recall)"
    )
    # triton = the served ranker; onnx = the same ONNX file in process (the benchmark's
    # ceiling); none = no ranker, candidates in the recall merge's order (a baseline).
    scorer: str = setting(
        "triton", env="STREAMREC_WORKER_SCORER", help=f"one of {', '.join(SCORERS)}"
    )
    batch_size: int = setting(128, env="STREAMREC_WORKER_BATCH_SIZE", help="requests per batch")
    # 0: a batch leaves as soon as the ranker is free (it grows only while the ranker is
    # busy); > 0 waits that long after the first request for fuller batches.
    batch_timeout_ms: int = setting(
        0, env="STREAMREC_WORKER_BATCH_TIMEOUT_MS", help="extra wait after a batch's first request"
    )
    # Users per Triton request; a micro-batch is split into chunks sent concurrently.
    users_per_request: int = setting(
        16, env="STREAMREC_WORKER_USERS_PER_REQUEST", help="users per Triton request"
    )
    max_inflight: int = setting(
        4, env="STREAMREC_WORKER_MAX_INFLIGHT", help="Triton requests in flight"
    )
    triton_timeout_ms: int = setting(
        1000, env="STREAMREC_WORKER_TRITON_TIMEOUT_MS", help="Triton budget before the fallback"
    )
    redis_timeout_ms: int = setting(
        200, env="STREAMREC_WORKER_REDIS_TIMEOUT_MS", help="Redis budget before the fallback"
    )
    # A request older than this (from its Kafka timestamp) when its batch is ranked gets the
    # fallback ranking at once, flagged deadline_exceeded: a backlog drains, never queues.
    deadline_ms: int = setting(
        0, env="STREAMREC_WORKER_DEADLINE_MS", help="older requests get the fallback (0 = off)"
    )
    # Made-up batches of 1, 2, 4, ... requests run through features, recall and the ranker
    # before the first poll, so that the first real requests do not pay for cold
    # connections and model instances (inference/worker/warm_up.py).
    warm_up_batches: int = setting(
        4, env="STREAMREC_WORKER_WARM_UP_BATCHES", help="warm-up batches at start (0 = none)"
    )
    # A worker started before any model is published would warm up against nothing
    # (Triton: "'ranker_python' is not found") and serve its first requests cold: it
    # waits this long for the model to be servable, and if it still is not, polls anyway
    # and runs the warm-up again between batches once the model appears.
    warm_up_wait_ms: int = setting(
        30_000,
        env="STREAMREC_WORKER_WARM_UP_WAIT_MS",
        help="wait for Triton to have the model ready before the warm-up (0 = no wait)",
    )
    # After a failure the dependency is skipped (fallback) for this long, then one call a
    # period tries it (inference.worker.scoring.Breaker). Short, because the failures a busy
    # box sees are stalls of a second, not outages: at 1,000 ms one Triton stall in the demo
    # turned 167 answers that came after it into fallbacks.
    retry_after_ms: int = setting(
        250, env="STREAMREC_WORKER_RETRY_AFTER_MS", help="skip a failed dependency this long"
    )
    # The traffic split between model versions (schemas/routing.py) is re-read this often;
    # a change applies within it, without a restart.
    routing_poll_ms: int = setting(
        1000, env="STREAMREC_WORKER_ROUTING_POLL_MS", help="re-read the traffic split (0 = off)"
    )
    # Faiss factory string (auto: exact up to 100k items, an HNSW graph above) and
    # search parameters in Faiss' ParameterSpace syntax; see inference/worker/item_index.py.
    recall_index: str = setting(
        "auto", env="STREAMREC_WORKER_RECALL_INDEX", help="Faiss index for the embedding route"
    )
    recall_search: str = setting(
        "", env="STREAMREC_WORKER_RECALL_SEARCH", help="its search parameters, e.g. efSearch=256"
    )
    # Faiss searches with OpenMP. A worker's batches are a few users, which one thread
    # searches in 0.2-0.7 ms (19k items); with one thread per core each search took as
    # long or longer, and the idle threads spin after every parallel region: 6 ms of CPU
    # per search on 2 cores, a third of a core at the demo's 57 batches/s.
    recall_threads: int = setting(
        1,
        env="STREAMREC_WORKER_RECALL_THREADS",
        help="Faiss search threads (0 = Faiss' default, one per core)",
    )
    recall_reload_poll_ms: int = setting(
        5000,
        env="STREAMREC_WORKER_RECALL_RELOAD_POLL_MS",
        help="rebuild the index beside when the embeddings change (0 = off)",
    )
    embedding_candidates: int = setting(
        40, env="STREAMREC_WORKER_EMBEDDING_CANDIDATES", help="recall: nearest items"
    )
    trend_candidates: int = setting(
        40, env="STREAMREC_WORKER_TREND_CANDIDATES", help="recall: trending in the categories"
    )
    # Co-visitation: the sets of the user's last clicks, each read this deep, summed.
    covisit_candidates: int = setting(
        40, env="STREAMREC_WORKER_COVISIT_CANDIDATES", help="recall: co-visited items (0 = off)"
    )
    covisit_clicks: int = setting(
        5, env="STREAMREC_WORKER_COVISIT_CLICKS", help="recall: last clicks whose co-visits count"
    )
    # The user's own items: the fresh view's, then the history's, most recent first
    # (schemas.online.history). Returns are the commonest next step on a shop.
    recent_candidates: int = setting(
        30, env="STREAMREC_WORKER_RECENT_CANDIDATES", help="recall: the user's own items (0 = off)"
    )
    popular_candidates: int = setting(
        50, env="STREAMREC_WORKER_POPULAR_CANDIDATES", help="recall: popular items"
    )
    max_candidates: int = setting(
        100, env="STREAMREC_WORKER_MAX_CANDIDATES", help="candidates ranked per user"
    )
    # Item and category trend rows are shared by many requests: reused for this long, they
    # make an answer's item features at most this much older than the store. User rows
    # and stock are always read (inference/worker/shared_rows.py).
    shared_rows_ttl_ms: int = setting(
        500, env="STREAMREC_WORKER_SHARED_ROWS_TTL_MS", help="reuse item/category rows (0 = off)"
    )
    # Python's collector, frozen after start and collecting the young generation this
    # rarely: full collections walking the heap were the worker's p99 (inference/worker/heap.py).
    gc_young_threshold: int = setting(
        50_000,
        env="STREAMREC_WORKER_GC_YOUNG_THRESHOLD",
        help="net allocations between young collections (0 = Python's defaults, no freeze)",
    )
    # Read-your-writes: when a request's trigger event is not in the store yet, re-read
    # for at most this long (the whole batch waits), then fold the trigger in.
    fresh_wait_ms: int = setting(
        10, env="STREAMREC_WORKER_FRESH_WAIT_MS", help="wait for the trigger to reach the store"
    )
    # When this many batches in a row waited and caught no trigger up, the store is seconds
    # behind: batches stop waiting, one a second probes (inference/worker/freshness.py).
    # A new worker's first wait decides on its own: it knows nothing of the store yet.
    fresh_wait_give_up: int = setting(
        20,
        env="STREAMREC_WORKER_FRESH_WAIT_GIVE_UP",
        help="fruitless waits in a row before batches stop waiting (0 = always wait)",
    )
    fold_trigger: bool = setting(
        True,
        env="STREAMREC_WORKER_FOLD_TRIGGER",
        help="add a trigger the store lacks to the user's sequence (else flag the answer)",
    )
    # Which of the user's own behaviours keep an item out of the answers. The online
    # evaluation (make eval-online, variant stream-exclude-viewed) measured the default.
    exclude_behaviors: str = setting(
        "buy",
        env="STREAMREC_WORKER_EXCLUDE_BEHAVIORS",
        help="comma-separated behaviours (pv, cart, fav, buy) whose items are not recommended",
    )
    max_per_category: int = setting(
        3, env="STREAMREC_WORKER_MAX_PER_CATEGORY", help="diversity cap per answer"
    )
    # At least this many answers are items the user never touched, where recall has them
    # (schemas.final_list): the rest may all be returns to viewed items.
    min_new_items: int = setting(
        MIN_NEW_ITEMS,
        env="STREAMREC_WORKER_MIN_NEW_ITEMS",
        help="answers that are items new to the user (0 = no quota)",
    )
    exactly_once: bool = setting(
        False, env="STREAMREC_WORKER_EXACTLY_ONCE", help="Kafka transactions"
    )
    # At least once: the next batch is scored while the last one's answers are still
    # being flushed to Kafka (its acknowledgement is a round trip the ranker need not
    # wait for). Deliveries stay in order; a batch's offsets are handed back only after
    # its own answers and every earlier batch's are durable. Exactly once ignores it.
    # Side by side at 400 requests/s (bench-sla --compare-at, three holds each): p99 31-35
    # against 37-39 ms; at 480, past the box's wall, no difference.
    overlap_delivery: bool = setting(
        True,
        env="STREAMREC_WORKER_OVERLAP_DELIVERY",
        help="score the next batch while the last one is delivered (at least once)",
    )
    # While a batch is scored the next one gathers requests; with this it stops gathering
    # its expected preparing time before the ranker is expected to be free (moving
    # averages), so that it is prepared meanwhile (inference/worker/gather.py). Side by
    # side (bench-sla --compare-at, three holds each, a slow day): median p50 17 against
    # 19 ms at 200 requests/s and 27 against 39 at 300; median p99 42 against 59 and 59
    # against 76; at 280, that day's limit, 2 of 3 holds passed against none. The price
    # is CPU: smaller batches (at 300 requests/s 2.6 against 5.2 requests, 2.1 against
    # 1.6 ms of the worker's CPU per request).
    prepare_ahead: bool = setting(
        True,
        env="STREAMREC_WORKER_PREPARE_AHEAD",
        help="prepare the next batch while the current one is scored, not after it",
    )
    transactional_id: str = setting(
        "",
        env="STREAMREC_WORKER_TRANSACTIONAL_ID",
        help="stable id per instance with exactly-once",
        shown="<group>-<host>-<slot>",
    )
    # Where workers of one host claim their slot of the default transactional id
    # (inference/worker/instance.py).
    instance_lock_dir: str = setting(
        "",
        env="STREAMREC_WORKER_INSTANCE_LOCK_DIR",
        help="lock files of the default transactional ids' slots",
        shown="<tmp>/streamrec-worker",
    )
    # How long a transaction a dead worker left open (under an id nobody reuses) can
    # hold back read-committed consumers; a live worker's transaction lasts one batch.
    transaction_timeout_ms: int = setting(
        10_000,
        env="STREAMREC_WORKER_TRANSACTION_TIMEOUT_MS",
        help="the broker aborts a transaction open longer than this",
    )
    # Kafka away longer than this (a batch undelivered, a transaction not committed)
    # stops the worker; its restart replays from the last commit. Shorter outages cost
    # only waiting: the batch is retried, and in exactly-once mode redone.
    delivery_timeout_ms: int = setting(
        300_000,
        env="STREAMREC_WORKER_DELIVERY_TIMEOUT_MS",
        help="how long a batch may wait for Kafka before the worker gives up",
    )
    # A worker that dies unannounced (kill -9, a lost node) keeps its partitions this
    # long; so the restart of a killed worker waits as long before its group lets it
    # in (Kafka's default, 45 s, was most of a restart's gap). The broker's floor is 6 s;
    # heartbeats come from librdkafka's own thread, so a busy worker does not miss them.
    session_timeout_ms: int = setting(
        10_000,
        env="STREAMREC_WORKER_SESSION_TIMEOUT_MS",
        help="a worker silent this long leaves its consumer group",
    )
    metrics_port: int = setting(
        9108, env="STREAMREC_WORKER_METRICS_PORT", help="Prometheus /metrics (0 = off)"
    )
    # Loopback unless a deployment says otherwise: a container sets 0.0.0.0 so that
    # Prometheus on its network can scrape it; a laptop's worker stays private.
    metrics_host: str = setting(
        "127.0.0.1", env="STREAMREC_WORKER_METRICS_HOST", help="address /metrics binds"
    )

    def __post_init__(self) -> None:
        positive = (
            "batch_size", "users_per_request", "max_inflight",
            "triton_timeout_ms", "redis_timeout_ms", "max_candidates", "max_per_category",
            "transaction_timeout_ms", "delivery_timeout_ms", "session_timeout_ms",
        )  # fmt: skip
        for name in positive:
            if (value := getattr(self, name)) < 1:
                raise SettingsError(f"{self.variable(name)} must be >= 1, got {value}")
        if self.deadline_ms < 0:
            raise SettingsError(f"{self.variable('deadline_ms')} must be >= 0 (0 = off)")
        if self.fresh_wait_ms < 0:
            raise SettingsError(f"{self.variable('fresh_wait_ms')} must be >= 0")
        for name in (
            "batch_timeout_ms",
            "shared_rows_ttl_ms",
            "gc_young_threshold",
            "fresh_wait_give_up",
            "covisit_candidates",
            "covisit_clicks",
            "recent_candidates",
            "min_new_items",
            "warm_up_batches",
            "warm_up_wait_ms",
        ):
            if (value := getattr(self, name)) < 0:
                raise SettingsError(f"{self.variable(name)} must be >= 0 (0 = off), got {value}")
        unknown = self.excluded_behaviors - set(BEHAVIORS)
        if unknown:
            raise SettingsError(
                f"{self.variable('exclude_behaviors')}: unknown behaviours {sorted(unknown)}; "
                f"known: {', '.join(BEHAVIORS)}"
            )
        if self.scorer not in SCORERS:
            raise SettingsError(
                f"{self.variable('scorer')} must be one of {SCORERS}, got {self.scorer!r}"
            )
        if not 0 <= self.metrics_port < 65536:
            raise SettingsError(f"{self.variable('metrics_port')}={self.metrics_port} is no port")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        return cls.load(environ)

    @property
    def excluded_behaviors(self) -> frozenset[str]:
        return frozenset(b.strip() for b in self.exclude_behaviors.split(",") if b.strip())


def env_name(field_name: str) -> str:
    """The variable of a field (tools list what the worker reads with it)."""
    return variables(WorkerSettings).get(field_name, WORKER_PREFIX + field_name.upper())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-worker",
        description=(
            "Consume recommendation requests from Kafka in micro-batches, read features from "
            "Redis (Feast's format), recall candidates (the request, co-visitation, Faiss, "
            "category trends, popular items), rank them on Triton, post-process and produce "
            "recommendations. "
            "Every flag defaults to its environment variable (shown in brackets)."
        ),
    )
    WorkerSettings.add_flags(parser)
    parser.add_argument(
        "--log-level", default=os.environ.get(LOG_LEVEL_ENV, "INFO"),
        help=f"logging level [{LOG_LEVEL_ENV}, default INFO]",
    )  # fmt: skip
    return parser


def settings_from(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> WorkerSettings:
    """The environment's settings with the flags that were given on top."""
    return WorkerSettings.load(environ, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)
