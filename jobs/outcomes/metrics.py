"""The outcome job's metrics: per variant, recommendations judged and hits among them.

Hit rate = ``rate(streamrec_outcome_hits_total[1h]) / rate(streamrec_outcome_judged_total[1h])``
by variant (the dashboard's "Model versions" row). Names start with ``streamrec_outcome_``.
The counters of answers outside a split (variant ``default``, no registry version), of
each hit behaviour, and of the topics given exist at 0 from start, so that their first
increase shows in ``rate()``.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge

from jobs.outcomes.join import NO_VARIANT, Verdict
from schemas.records import BEHAVIORS


class OutcomeMetrics:
    """The outcome job's metrics; ``topics`` are the topics it reads (skipped records)."""

    def __init__(
        self, registry: CollectorRegistry | None = None, topics: Sequence[str] = ()
    ) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.judged = Counter(
            "streamrec_outcome_judged",
            "Recommendations whose horizon closed (hit or miss), per variant.",
            ["variant", "registry_version"],
            registry=r,
        )
        self.hits = Counter(
            "streamrec_outcome_hits",
            "Recommendations the user acted on within the horizon, per variant and the "
            "behaviour that made the hit.",
            ["variant", "registry_version", "behavior"],
            registry=r,
        )
        self.open = Gauge(
            "streamrec_outcome_open", "Recommendations waiting for their horizon.", registry=r
        )
        self.skipped = Counter(
            "streamrec_outcome_skipped",
            "Records that did not decode, by topic (their dead letters are their "
            "consumers' own: the feature job's, the worker's).",
            ["topic"],
            registry=r,
        )
        self._known_labels(topics)

    def _known_labels(self, topics: Sequence[str]) -> None:
        """Create the series of every known label value at 0: answers outside a split
        (the variant every answer has without one), each hit behaviour, each topic."""
        self.judged.labels(NO_VARIANT, "")
        for behavior in BEHAVIORS:
            self.hits.labels(NO_VARIANT, "", behavior)
        for topic in topics:
            self.skipped.labels(topic)

    def count(self, verdicts: list[Verdict]) -> None:
        for v in verdicts:
            self.judged.labels(v.variant, v.registry_version).inc()
            if v.hit:
                self.hits.labels(v.variant, v.registry_version, v.behavior).inc()
