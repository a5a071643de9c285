"""Every Prometheus metric the feature writer exposes (names are what dashboards query).

All names start with ``streamrec_writer_``. Metrics live in their own registry so
that several loops (or tests) in one process do not collide on the default one.

The loop's own counts (:class:`jobs.feature_writer.loop.WriterStats`, its progress
line) are exported as they are: :data:`STAT_COUNTERS` names one counter per field,
and the loop adds to a field and to its counter in one step, so the two cannot
disagree. Dead letters by kind mirror the consumer's dead-letter publisher, which
counts every record it refused (at decoding) or the loop gave it (not convertible).
The dead-letter kinds exist at 0 from start, so the first of a kind shows in ``rate()``.

``streamrec_writer_newest_event_timestamp_seconds`` is event time: on a replay of old
events it reads years behind the wall clock, and ``time()`` minus it is not a lag of
the writer's (the group's consumer lag on the changelog is).
"""

from __future__ import annotations

from collections.abc import Mapping
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runtime.metrics_server import LOOPBACK, serve_registry
from schemas.errors import INVALID_RECORD_KINDS

# Sub-millisecond to multi-second, as the worker's: one batch's Redis pipeline is
# milliseconds, a slow or failing Redis seconds (its socket timeout is 5 s).
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
# Records per batch, up to the default batch size (2,000) and past it.
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
# WriterStats field -> (counter name without _total, help).
STAT_COUNTERS: Mapping[str, tuple[str, str]] = {
    "records": (
        "streamrec_writer_records",
        "Valid changelog records consumed (refused ones are dead letters, not counted here).",
    ),
    "rows": (
        "streamrec_writer_rows",
        "Feature rows sent to Redis, after coalescing a batch's updates of one entity.",
    ),
    "written": (
        "streamrec_writer_rows_written",
        "Rows Redis stored: newer than the row it held for that entity and view.",
    ),
    "stale": (
        "streamrec_writer_stale_rows",
        "Rows skipped by the newer-wins rule: Redis already held a row at least as new "
        "(a replay, or an update overtaken by a newer one).",
    ),
    "bad_rows": (
        "streamrec_writer_unconvertible_records",
        "Records that decoded but could not be turned into rows (a broken packed sequence "
        "or trend string); dead-lettered, so also counted in "
        'streamrec_writer_dead_letters_total{kind="schema"}.',
    ),
    "covisits": (
        "streamrec_writer_covisits",
        "Clicks whose co-visits were counted into the co-visitation sets (a replayed click "
        "already counted is not counted again).",
    ),
    "batches": ("streamrec_writer_batches", "Batches with at least one valid record."),
    "redis_failures": (
        "streamrec_writer_redis_failures",
        "Redis writes of a batch that failed; each is retried with backoff, and nothing is "
        "committed until one succeeds.",
    ),
}


class WriterMetrics:
    """The feature writer's metrics, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.stat_counters = {
            field: Counter(name, help_text, registry=r)
            for field, (name, help_text) in STAT_COUNTERS.items()
        }
        self.dead_letters = Counter(
            "streamrec_writer_dead_letters",
            "Changelog records sent to its dead-letter topic, by error kind: refused at "
            "decoding, or decoded but not convertible (schema).",
            ["kind"],
            registry=r,
        )
        self.batch_size = Histogram(
            "streamrec_writer_batch_size",
            "Valid records per batch with any (_count is the batches, _sum the records).",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.write_seconds = Histogram(
            "streamrec_writer_batch_write_seconds",
            "Time of one batch's Redis pipeline (rows and co-visit counts), the attempt "
            "that succeeded; failed attempts are streamrec_writer_redis_failures_total.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.commit_seconds = Histogram(
            "streamrec_writer_commit_seconds",
            "Time to make a batch's dead letters durable and commit its offsets, per batch "
            "that consumed anything.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.newest_event = Gauge(
            "streamrec_writer_newest_event_timestamp_seconds",
            "Event time (Unix seconds) of the newest changelog record written to Redis (a "
            "user's latest click, a window's end), 0 before the first: event time, so it "
            "reads years old on a replay of old events; not a processing lag.",
            registry=r,
        )
        self._known_labels()

    def _known_labels(self) -> None:
        """Create the dead-letter counter's series of every known kind at 0."""
        for kind in INVALID_RECORD_KINDS:
            self.dead_letters.labels(kind)


def serve(metrics: WriterMetrics, port: int, addr: str = LOOPBACK) -> WSGIServer | None:
    """Expose ``/metrics`` on ``addr``:``port`` (0 = do not serve; loopback by default)."""
    return serve_registry(metrics.registry, port, addr)
