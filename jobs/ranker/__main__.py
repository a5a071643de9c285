"""``streamrec-train``: train, evaluate, lighten and write the model directory."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs.ranker.settings import load_settings


def main(argv: Sequence[str] | None = None) -> int:
    settings = load_settings(argv)  # before the heavy imports: --help stays instant
    from jobs.ranker.registry import check_reachable, register_training, registry_uri
    from schemas.model_registry import RegistryError

    uri = registry_uri(settings)
    if uri is not None:
        try:
            check_reachable(uri)  # now, not after minutes of training
        except RegistryError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    from jobs.ranker.job import run
    from jobs.ranker.report import result_line, summary

    print(f"training the ranker on {settings.dataset} into {settings.out}", flush=True)
    metrics = run(settings, lambda line: print(line, flush=True))
    print()
    print(summary(metrics))
    print(f"\nmodel directory: {settings.out} (served variant: {metrics['served_variant']})")
    print(result_line(metrics))
    if uri is not None:
        try:
            run_id, version = register_training(settings, metrics, uri)
        except (RegistryError, OSError) as error:
            print(f"error: registering {settings.out} in {uri}: {error}", file=sys.stderr)
            return 2
        print(f"registered models:/{version.name}/{version.version} (run {run_id}) in {uri}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
