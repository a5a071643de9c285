"""``python -m jobs.outcomes``: per-variant hit rate of the recommendations, on Prometheus."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from jobs.outcomes.loop import OutcomeLoop
from jobs.outcomes.metrics import OutcomeMetrics
from jobs.outcomes.settings import OutcomeSettings, OutcomeSettingsError
from runtime.metrics_server import serve_registry


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="streamrec-outcome",
        description="Join the recommendations with the users' later events: a recommendation "
        "is a hit when its user views, carts, favours or buys one of its items within the "
        "horizon. Exports judged and hit counts per variant (hit rate per model version). "
        "Every flag defaults to its environment variable (in brackets).",
    )
    OutcomeSettings.add_flags(parser)
    args = parser.parse_args(argv)
    try:
        settings = OutcomeSettings.load(None, args)
    except OutcomeSettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    metrics = OutcomeMetrics(topics=(settings.recommendations_topic, settings.events_topic))
    serve_registry(metrics.registry, settings.metrics_port, settings.metrics_host)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    OutcomeLoop(settings, metrics).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
