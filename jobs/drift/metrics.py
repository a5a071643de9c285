"""Every Prometheus metric the drift job exposes (names are what dashboards query).

All names start with ``streamrec_drift_``. Metrics live in their own registry
so that the job and tests in one process do not collide on the default one.
Labelled counters exist at 0 for every known label value from start, so the first
check of a status (or record of a source) shows in ``rate()``.
"""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runtime.metrics_server import LOOPBACK, serve_registry
from schemas.records import DriftAlert

STATUSES = ("ok", "drift", "insufficient_data")
# The roles of the topics the job reads (jobs/drift/cli.py names its sources so).
SOURCES = ("features", "recommendations")


class DriftMetrics:
    """The drift job's metrics, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.share = Gauge(
            "streamrec_drift_share", "Share of judged features that drifted.", registry=r
        )
        self.feature_score = Gauge(
            "streamrec_drift_feature_score",
            "Latest drift distance per feature (method in the label).",
            ["feature", "method"],
            registry=r,
        )
        self.feature_threshold = Gauge(
            "streamrec_drift_feature_threshold",
            "Threshold the feature's score is compared with.",
            ["feature", "method"],
            registry=r,
        )
        self.feature_drifted = Gauge(
            "streamrec_drift_feature_drifted",
            "1 when the feature drifted in the latest judged check.",
            ["feature"],
            registry=r,
        )
        self.status = Gauge(
            "streamrec_drift_status",
            "1 for the latest check's status (ok, drift, insufficient_data), 0 for the others.",
            ["status"],
            registry=r,
        )
        self.window_rows = Gauge(
            "streamrec_drift_window_rows", "Rows in the latest check's window.", registry=r
        )
        self.last_check = Gauge(
            "streamrec_drift_last_check_timestamp_seconds",
            "When the latest check ran (Unix seconds).",
            registry=r,
        )
        self.checks = Counter(
            "streamrec_drift_checks", "Checks run, by status.", ["status"], registry=r
        )
        self.records = Counter(
            "streamrec_drift_records",
            "Records consumed, by source topic role (features, recommendations).",
            ["source"],
            registry=r,
        )
        self.dead_letters = Counter(
            "streamrec_drift_dead_letters",
            "Records sent to a dead-letter topic.",
            registry=r,
        )
        self.check_seconds = Histogram(
            "streamrec_drift_check_seconds",
            "Time one check takes (Evidently run, report, publish).",
            buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
            registry=r,
        )
        self._known_labels()

    def _known_labels(self) -> None:
        """Create the labelled counters' series of every known label value at 0."""
        for status in STATUSES:
            self.checks.labels(status=status)
        for source in SOURCES:
            self.records.labels(source=source)

    def record_check(self, alert: DriftAlert, seconds: float) -> None:
        """Set the gauges from one check's alert."""
        for status in STATUSES:
            self.status.labels(status=status).set(1.0 if alert.status == status else 0.0)
        self.checks.labels(status=alert.status).inc()
        self.window_rows.set(alert.rows)
        self.last_check.set(alert.checked_at / 1000)
        self.check_seconds.observe(seconds)
        if alert.status == "insufficient_data":
            return  # keep the last judged scores on screen rather than zeros
        self.share.set(alert.drifted_share)
        for feature in alert.features:
            labels = {"feature": feature.feature, "method": feature.method}
            self.feature_score.labels(**labels).set(feature.score)
            self.feature_threshold.labels(**labels).set(feature.threshold)
            self.feature_drifted.labels(feature=feature.feature).set(float(feature.drifted))


def serve(metrics: DriftMetrics, port: int, addr: str = LOOPBACK) -> WSGIServer | None:
    """Expose ``/metrics`` on ``addr``:``port`` (0 = do not serve; loopback by default)."""
    return serve_registry(metrics.registry, port, addr)
