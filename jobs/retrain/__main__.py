"""``python -m jobs.retrain``: watch the drift alerts; sustained drift retrains and canaries."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from jobs.retrain.loop import RetrainLoop
from jobs.retrain.settings import RetrainError, RetrainSettings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="streamrec-retrain",
        description="Watch the drift job's alerts. After N drifted checks in a row, export "
        "the recent events, train a candidate against the served model on the same "
        "held-out rows, register it in MLflow and, if it is better, canary it. Every flag "
        "defaults to its environment variable (in brackets).",
    )
    RetrainSettings.add_flags(parser)
    args = parser.parse_args(argv)
    try:
        settings = RetrainSettings.from_env(args=args)
    except RetrainError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    RetrainLoop(settings, lambda line: print(line, flush=True)).watch(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
