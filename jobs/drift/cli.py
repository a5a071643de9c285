"""``streamrec-drift``: the drift watch, and ``reference`` to build its reference."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from confluent_kafka import Producer

from jobs.drift.check import CheckResult
from jobs.drift.errors import SettingsError
from jobs.drift.loop import DriftLoop, Source
from jobs.drift.metrics import DriftMetrics, serve
from jobs.drift.reference import load_reference
from jobs.drift.reference_cli import add_reference_parser, run_reference
from jobs.drift.settings import DriftSettings
from runtime.consumer import RecordConsumer
from runtime.kafka import TopicSpec, dead_letter_spec, ensure_topics
from runtime.redact import install_redaction
from runtime.settings import variables_help
from schemas.codec import feature_update_codec, recommendation_codec
from schemas.topics import dead_letter_topic

logger = logging.getLogger("jobs.drift")


@dataclass(frozen=True)
class Verdict:
    """The last judged check of a run and where its report is: what ``make demo`` prints."""

    checks: int
    status: str
    drifted: tuple[str, ...]
    report: Path | None

    def line(self) -> str:
        return (
            f"DRIFT status={self.status} checks={self.checks} "
            f"drifted={','.join(self.drifted) or '-'} report={self.report or '-'}"
        )


def build_loop(
    settings: DriftSettings, stop: threading.Event | None = None, **hooks: Any
) -> DriftLoop:
    """Consumers, producer, reference and metrics wired from ``settings``."""
    reference = load_reference(settings.reference)
    topics = [settings.features_topic, settings.alerts_topic]
    if settings.recommendations_topic:
        topics.append(settings.recommendations_topic)
    ensure_topics(
        settings.kafka,
        [TopicSpec(t, partitions=1 if t == settings.alerts_topic else 4) for t in topics]
        + [dead_letter_spec(dead_letter_topic(t)) for t in topics if t != settings.alerts_topic],
    )
    sources = [
        Source(
            "features",
            RecordConsumer(
                settings.kafka, [settings.features_topic], settings.group_id, feature_update_codec()
            ),
        )
    ]
    if settings.recommendations_topic:
        scores: RecordConsumer[Any] = RecordConsumer(
            settings.kafka,
            [settings.recommendations_topic],
            settings.group_id + "-scores",
            recommendation_codec(),
        )
        sources.append(Source("recommendations", scores))
    producer = Producer(settings.kafka.client_config(**{"enable.idempotence": True}))
    return DriftLoop(settings, reference, sources, producer, DriftMetrics(), stop, **hooks)


def run_watch(
    settings: DriftSettings,
    max_checks: int | None = None,
    idle_seconds: float | None = None,
    stop: threading.Event | None = None,
) -> Verdict:
    """Run the watch; return the verdict of its last judged check (for ``make demo``)."""
    results: list[tuple[CheckResult, Path | None]] = []
    loop = build_loop(settings, stop, on_check=lambda r, p: results.append((r, p)))
    serve(loop.metrics, settings.metrics_port, settings.metrics_host)
    try:
        checks = loop.run(max_checks=max_checks, idle_seconds=idle_seconds)
    finally:
        loop.close()
    judged = [(r, p) for r, p in results if r.snapshot is not None] or results
    if not judged:
        return Verdict(checks, "no_data", (), None)
    last, report = judged[-1]
    drifted = tuple(f.feature for f in last.alert.features if f.drifted)
    return Verdict(checks, last.alert.status, drifted, report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-drift",
        description="Watch the feature changelog (and recommendation scores) for drift "
        "against the reference saved with the model, with Evidently. Each check publishes "
        "one DriftAlert, updates Prometheus gauges and writes an HTML and JSON report. "
        "`watch` is the default command; its flags default to the variables below.",
        # The watch's flags live on its subcommand: list its variables here too.
        epilog=variables_help(DriftSettings),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--log-level", default="INFO")
    commands = parser.add_subparsers(dest="command")
    watch = commands.add_parser("watch", help="run the drift watch (the default command)")
    add_watch_flags(watch)
    add_reference_parser(commands)
    return parser


def add_watch_flags(parser: argparse.ArgumentParser) -> None:
    DriftSettings.add_flags(parser)
    parser.add_argument("--max-checks", type=int, help="stop after this many checks")
    parser.add_argument(
        "--idle-seconds", type=float, help="check what is left and stop after this long idle"
    )


def settings_from(args: argparse.Namespace) -> DriftSettings:
    """Environment settings with the given flags laid over them."""
    return DriftSettings.from_env(args=args)


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT end the loop after the current poll; the window is not judged."""

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a in ("watch", "reference", "-h", "--help") for a in argv):
        argv.insert(_after_global_flags(argv), "watch")
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "reference":
        return run_reference(args)
    try:
        settings = settings_from(args)
    except SettingsError as exc:
        logger.error("%s", exc)
        return 2
    install_redaction(settings)
    logger.info("starting: %s", settings.describe())
    stop = threading.Event()
    install_stop_handlers(stop)
    verdict = run_watch(settings, args.max_checks, args.idle_seconds, stop)
    print(verdict.line())
    return 0


def _after_global_flags(argv: list[str]) -> int:
    """Where the default ``watch`` command goes: after ``--log-level X`` if given first."""
    return 2 if argv[:1] == ["--log-level"] else 0
