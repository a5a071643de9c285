"""What the canary controller exports while it runs (``--metrics-port``).

``streamrec_canary_breach`` is 1 from the moment a guard breaks until the command
exits (it stays up ``--linger`` seconds after a rollback, so Prometheus scrapes it
and ``StreamrecCanaryBreach`` in docker/prometheus/rules/slo.rules.yml pages);
``streamrec_canary_share`` is the canary's share of users at its current step.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

# The guards of inference/serving/canary.py as the breach's ``check`` label names them, and
# the controller itself failing mid-way (it rolls back then, too).
CHECKS = ("error_rate", "latency_p99", "score_shift", "controller")


class CanaryMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        labels = ["model", "baseline_version", "canary_version"]
        self.breach = Gauge(
            "streamrec_canary_breach",
            f"1 once a canary version broke a guard ({', '.join(CHECKS)}) against the "
            "baseline, 0 while it holds.",
            [*labels, "check"],
            registry=self.registry,
        )
        self.share = Gauge(
            "streamrec_canary_share",
            "Percent of users the canary version answers at its current step.",
            labels,
            registry=self.registry,
        )

    def started(self, model: str, baseline: int, canary: int) -> None:
        for check in CHECKS:
            self.breach.labels(model, str(baseline), str(canary), check).set(0)

    def stepped(self, model: str, baseline: int, canary: int, share_pct: float) -> None:
        self.share.labels(model, str(baseline), str(canary)).set(share_pct)

    def breached(self, model: str, baseline: int, canary: int, check: str) -> None:
        self.breach.labels(model, str(baseline), str(canary), check).set(1)
