"""A complete metrics.json of a training run, as ``jobs.ranker`` writes it (no training)."""

from __future__ import annotations

from typing import Any

CATALOGUE_METHODS = ("model", "popularity", "recently clicked", "covisitation")
LIST_METHODS = ("model", "norank", "recent-first", "popular", "lambdamart")


def training_metrics(served_variant: str = "int8") -> dict[str, Any]:
    """Every key the report and the registry read, with plausible values."""
    return {
        "served_variant": served_variant,
        "variants": [{"variant": "fp32", "auc": 0.9}, {"variant": "int8", "auc": 0.89}],
        "lists": {
            m: {"hit_at_10": 0.4, "ndcg_at_10": 0.13, "new_item_hit_at_10": 0.01}
            for m in LIST_METHODS
        },
        "hit_ratio_vs_norank": {"ratio": 1.1, "low": 1.05, "high": 1.15},
        "beats_recall_order": True,
        "catalogue": {m: {"recall_at_50": 0.1, "ndcg_at_10": 0.05} for m in CATALOGUE_METHODS},
        "split": {"eval_rows": 500},
    }
