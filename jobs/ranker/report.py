"""The job's printed summary: metric tables and the final ``RESULT`` line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LIST_COLUMNS = ("hit_at_10", "ndcg_at_10", "new_item_hit_at_10")
CATALOGUE_COLUMNS = ("recall_at_10", "ndcg_at_10", "recall_at_50", "ndcg_at_50")
# RESULT-line prefixes of the whole-catalogue methods (metrics.json names them in full)
_CATALOGUE_KEYS = {
    "model": "",
    "popularity": "popularity_",
    "recently clicked": "recent_",
    "covisitation": "covisit_",
}
_LIST_NAMES = {
    "model": "ranker (served network)",
    "lambdamart": "LambdaMART (LightGBM)",
    "norank": "norank (recall merge order)",
    "recent-first": "recent-first",
    "popular": "popular",
}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Right-aligned columns under a dashed rule (the benchmark doc's format)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = (header, ["-" * w for w in widths], *rows)
    return "\n".join(
        "  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in lines
    )


def lists_table(metrics: dict[str, Any]) -> str:
    return table(
        ["method", *LIST_COLUMNS],
        [
            [_LIST_NAMES.get(name, name), *(f"{values[m]:.4f}" for m in LIST_COLUMNS)]
            for name, values in metrics["lists"].items()
        ],
    )


def catalogue_table(metrics: dict[str, Any]) -> str:
    rows = [
        (_LIST_NAMES["model"] if n == "model" else n, v) for n, v in metrics["catalogue"].items()
    ]
    return table(
        ["method", *CATALOGUE_COLUMNS, "seconds"],
        [
            [name, *(f"{values[m]:.4f}" for m in CATALOGUE_COLUMNS), f"{values['seconds']:.1f}"]
            for name, values in rows
        ],
    )


def variants_table(metrics: dict[str, Any]) -> str:
    return table(
        ["variant", "auc", "auc_loss", "max_abs_diff", "cands_per_s", "speedup", "served"],
        [
            [
                v["variant"],
                f"{v['auc']:.4f}",
                f"{v['auc_loss']:+.4f}",
                f"{v['max_abs_diff']:.1e}",
                f"{v['candidates_per_s']:,.0f}",
                f"{v['speedup']:.2f}x",
                "yes" if v["variant"] == metrics["served_variant"] else "",
            ]
            for v in metrics["variants"]
        ],
    )


def summary(metrics: dict[str, Any]) -> str:
    split = metrics["split"]
    ratio = metrics["hit_ratio_vs_norank"]
    verdict = (
        "beats the recall order: publishable"
        if metrics["beats_recall_order"]
        else "does NOT beat the recall order: publishing refuses it, workers answer in "
        "recall order (flagged)"
    )
    return "\n".join(
        (
            f"Held-out lists: {split['eval_rows']} replayed requests, the worker's own "
            f"candidates, answers as the worker sends them (new-item quota "
            f"{metrics['min_new_items']}); truth = items touched in the next 30 minutes",
            lists_table(metrics),
            f"hit@10 ranker / norank: {ratio['ratio']:.3f} "
            f"(paired bootstrap 95% interval {ratio['low']:.3f}-{ratio['high']:.3f}); "
            f"the model {verdict}",
            "",
            "Whole catalogue: each held-out request asked for the user's next item among "
            f"all {split['num_items'] - 2} train items (recalled candidates first for the "
            "ranker; an item unseen in training is a miss for every method)",
            catalogue_table(metrics),
            "",
            "ONNX variants (ONNX Runtime on CPU, same lists; candidates/s on one batch of "
            "64 users, median of 7 alternating rounds)",
            variants_table(metrics),
        )
    )


def result_line(metrics: dict[str, Any]) -> str:
    """List metrics of the held-out requests; ``full_*`` rank the whole catalogue."""
    served = next(v for v in metrics["variants"] if v["variant"] == metrics["served_variant"])
    lists = metrics["lists"]
    values: dict[str, float | int] = {
        "hit_at_10": lists["model"]["hit_at_10"],
        "ndcg_at_10": lists["model"]["ndcg_at_10"],
        "new_item_hit_at_10": lists["model"]["new_item_hit_at_10"],
        "norank_hit_at_10": lists["norank"]["hit_at_10"],
        "norank_ndcg_at_10": lists["norank"]["ndcg_at_10"],
        "recent_first_hit_at_10": lists["recent-first"]["hit_at_10"],
        "recent_first_ndcg_at_10": lists["recent-first"]["ndcg_at_10"],
        "popular_ndcg_at_10": lists["popular"]["ndcg_at_10"],
        "lambdamart_hit_at_10": lists["lambdamart"]["hit_at_10"],
        "lambdamart_ndcg_at_10": lists["lambdamart"]["ndcg_at_10"],
        "hit_ratio_low": metrics["hit_ratio_vs_norank"]["low"],
        "beats_recall_order": int(metrics["beats_recall_order"]),
        "served_variant_auc": served["auc"],
    }
    for method, prefix in _CATALOGUE_KEYS.items():
        for metric in ("recall_at_50", "ndcg_at_10"):
            values[f"{prefix}full_{metric}"] = metrics["catalogue"][method][metric]
    values["eval_rows"] = metrics["split"]["eval_rows"]
    return "RESULT " + " ".join(
        f"{key}={value}" if isinstance(value, int) else f"{key}={value:.4f}"
        for key, value in values.items()
    )
