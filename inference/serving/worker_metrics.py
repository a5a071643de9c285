"""Reading the workers' per-variant figures from their ``/metrics`` endpoints.

The canary controller sums ``streamrec_worker_variant_answers``,
``streamrec_worker_variant_seconds`` and ``streamrec_worker_variant_scores`` over
every worker it is given (each worker answers a share of the partitions, so
only the sum is the variant's traffic).
"""

from __future__ import annotations

import urllib.request
from collections import defaultdict
from collections.abc import Sequence

from prometheus_client.parser import text_string_to_metric_families

from inference.serving.canary import VariantFigures
from inference.serving.errors import ServingError

ANSWERS = "streamrec_worker_variant_answers"
LATENCY = "streamrec_worker_variant_seconds"
SCORES = "streamrec_worker_variant_scores"


def parse(texts: Sequence[str]) -> dict[str, VariantFigures]:
    """Variant → its figures summed over the exposition ``texts``."""
    answers: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    buckets: dict[tuple[str, str], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for text in texts:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = sample.labels
                if family.name == ANSWERS and sample.name == f"{ANSWERS}_total":
                    answers[labels["variant"]][labels["outcome"]] += sample.value
                elif family.name in (LATENCY, SCORES) and sample.name.endswith("_bucket"):
                    key = (labels["variant"], family.name)
                    buckets[key][float(labels["le"])] += sample.value
    variants = set(answers) | {variant for variant, _ in buckets}
    return {
        v: VariantFigures(
            dict(answers[v]),
            tuple(sorted(buckets[(v, LATENCY)].items())),
            tuple(sorted(buckets[(v, SCORES)].items())),
        )
        for v in variants
    }


def scrape(urls: Sequence[str], timeout_s: float = 5.0) -> dict[str, VariantFigures]:
    """Every worker's figures, summed; ServingError naming the first one that fails."""
    texts = []
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for url in urls:
        target = url if url.rstrip("/").endswith("/metrics") else f"{url.rstrip('/')}/metrics"
        try:
            with opener.open(target, timeout=timeout_s) as response:
                texts.append(response.read().decode())
        except OSError as error:
            raise ServingError(f"worker metrics at {target} unreadable: {error}") from None
    return parse(texts)
