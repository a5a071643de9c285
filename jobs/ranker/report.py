"""The job's printed summary: metric tables and the final ``RESULT`` line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

METRIC_COLUMNS = ("auc", "recall_at_10", "ndcg_at_10", "recall_at_50", "ndcg_at_50")
CATALOGUE_COLUMNS = ("recall_at_10", "ndcg_at_10", "recall_at_50", "ndcg_at_50")
# RESULT-line prefixes of the whole-catalogue methods (metrics.json names them in full)
_CATALOGUE_KEYS = {
    "model": "",
    "popularity": "popularity_",
    "recently clicked": "recent_",
    "covisitation": "covisit_",
}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Right-aligned columns under a dashed rule (the benchmark doc's format)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = (header, ["-" * w for w in widths], *rows)
    return "\n".join(
        "  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in lines
    )


def ranking_table(metrics: dict[str, Any]) -> str:
    rows = [("DIN (PyTorch)", metrics["model"]), *metrics["baselines"].items()]
    return table(
        ["method", *METRIC_COLUMNS],
        [[name, *(f"{values[m]:.4f}" for m in METRIC_COLUMNS)] for name, values in rows],
    )


def catalogue_table(metrics: dict[str, Any]) -> str:
    rows = [("DIN (PyTorch)" if n == "model" else n, v) for n, v in metrics["catalogue"].items()]
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
    candidates = metrics["eval_candidates"]
    return "\n".join(
        (
            f"Held-out period: {split['eval_rows']} positives, each ranked against "
            f"{candidates - 1} sampled negatives",
            ranking_table(metrics),
            "",
            f"Whole catalogue: {split['full_eval_rows']} held-out positives (seeded sample), "
            f"each ranked against all {split['num_items'] - 2} train items; "
            f"{split['full_eval_unseen']} are on items unseen in training, misses for every "
            f"method (best possible recall {_ceiling(split):.4f})",
            catalogue_table(metrics),
            "",
            "ONNX variants (ONNX Runtime on CPU, same rows; candidates/s on one batch of "
            "64 users, median of 7 alternating rounds)",
            variants_table(metrics),
        )
    )


def _ceiling(split: dict[str, int]) -> float:
    return 1.0 - split["full_eval_unseen"] / split["full_eval_rows"]


def result_line(metrics: dict[str, Any]) -> str:
    """``recall_at_50`` is the sampled one (kept); ``full_*`` rank the whole catalogue."""
    served = next(v for v in metrics["variants"] if v["variant"] == metrics["served_variant"])
    values: dict[str, float | int] = {
        "auc": metrics["model"]["auc"],
        "popularity_auc": metrics["baselines"]["popularity"]["auc"],
        "covisit_auc": metrics["baselines"]["covisitation"]["auc"],
        "served_variant_auc": served["auc"],
        "recall_at_50": metrics["model"]["recall_at_50"],
    }
    for method, prefix in _CATALOGUE_KEYS.items():
        for metric in ("recall_at_50", "ndcg_at_10"):
            values[f"{prefix}full_{metric}"] = metrics["catalogue"][method][metric]
    values["unseen_positives"] = metrics["split"]["full_eval_unseen"]
    values["full_eval_rows"] = metrics["split"]["full_eval_rows"]
    return "RESULT " + " ".join(
        f"{key}={value}" if isinstance(value, int) else f"{key}={value:.4f}"
        for key, value in values.items()
    )
