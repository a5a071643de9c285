"""``streamrec-train``: train, evaluate, lighten and write the model directory."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs.ranker.settings import load_settings


def main(argv: Sequence[str] | None = None) -> int:
    settings = load_settings(argv)  # before the heavy imports: --help stays instant
    from jobs.ranker.job import run
    from jobs.ranker.report import result_line, summary

    print(f"training the ranker on {settings.dataset} into {settings.out}", flush=True)
    metrics = run(settings, lambda line: print(line, flush=True))
    print()
    print(summary(metrics))
    print(f"\nmodel directory: {settings.out} (served variant: {metrics['served_variant']})")
    print(result_line(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
