"""``streamrec-train``: train, evaluate, lighten and write the model directory."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from jobs.ranker.settings import TrainSettings, load_settings
from schemas.model_files import DRIFT_REFERENCE_FILE as REFERENCE_NAME


def main(argv: Sequence[str] | None = None) -> int:
    settings = load_settings(argv)  # before the heavy imports: --help stays instant
    from jobs.ranker.registry import check_reachable, register_training, registry_uri
    from runtime.model_registry import RegistryError

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
        build_drift_reference(settings)  # a registered version carries its reference
        try:
            run_id, version = register_training(settings, metrics, uri)
        except (RegistryError, OSError) as error:
            print(f"error: registering {settings.out} in {uri}: {error}", file=sys.stderr)
            return 2
        print(f"registered models:/{version.name}/{version.version} (run {run_id}) in {uri}")
    return 0


def drift_reference_argv(settings: TrainSettings) -> list[str]:
    """``python -m jobs.drift reference`` for this run's model directory.

    The reference is the population the model will serve: the replayed stream for the
    bundled training files (``make train`` builds the same), and for a model retrained
    on exported events (dataset ``events``) those very events, so that once it is
    promoted the drift job compares live features with what it learned from.
    """
    argv = [sys.executable, "-m", "jobs.drift", "reference"]
    argv += ["--out", str(settings.out / REFERENCE_NAME)]
    if settings.dataset == "events" and settings.file is not None:
        argv += ["--dataset", "events", "--file", str(settings.file)]
    return argv


def build_drift_reference(settings: TrainSettings) -> None:
    """Build it beside the model; a failure (no drift extra installed) only warns."""
    result = subprocess.run(drift_reference_argv(settings), capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"warning: no drift reference registered with the model: {tail[0]}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
