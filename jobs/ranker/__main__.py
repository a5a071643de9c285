"""``python -m jobs.ranker``: train, evaluate, lighten and write the model directory."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from jobs.ranker.job import run
from jobs.ranker.settings import load_settings
from tests.benchmarks.report import print_table

_METRICS = ("auc", "recall_at_10", "ndcg_at_10", "recall_at_50", "ndcg_at_50")


def print_report(metrics: dict[str, Any]) -> None:
    rows = [("DIN (PyTorch)", metrics["model"])]
    rows += [(name, values) for name, values in metrics["baselines"].items()]
    print(f"\nHeld-out ranking ({metrics['split']['eval_rows']} rows, 1 true + sampled negatives)")
    print_table(["method", *_METRICS], [[n, *(f"{v[m]:.4f}" for m in _METRICS)] for n, v in rows])
    print("\nONNX variants (ONNX Runtime, CPU, same rows and batch)")
    print_table(
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


def result_line(metrics: dict[str, Any]) -> str:
    served = next(v for v in metrics["variants"] if v["variant"] == metrics["served_variant"])
    values = {
        "auc": metrics["model"]["auc"],
        "popularity_auc": metrics["baselines"]["popularity"]["auc"],
        "covisit_auc": metrics["baselines"]["covisitation"]["auc"],
        "served_variant_auc": served["auc"],
        "recall_at_50": metrics["model"]["recall_at_50"],
    }
    return "RESULT " + " ".join(f"{key}={value:.4f}" for key, value in values.items())


def main(argv: Sequence[str] | None = None) -> int:
    settings = load_settings(argv)
    print(f"training the ranker on {settings.dataset} into {settings.out}", flush=True)
    metrics = run(settings, lambda line: print(line, flush=True))
    print_report(metrics)
    print(f"\nmodel directory: {settings.out} (served variant: {metrics['served_variant']})")
    print(result_line(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
