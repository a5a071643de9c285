"""``streamrec-demo`` (``make demo``): the whole loop on real data.

1. A ranker: the one in ``STREAMREC_MODEL_DIR`` (default ``.cache/ranker``), or
   one trained now on the Taobao 9-day file (``make train``), with its drift
   reference.
2. Services: Kafka, Redis and Triton serving the ranker, from the local stack
   unless ``STREAMREC_KAFKA_BOOTSTRAP_SERVERS``/``STREAMREC_REDIS_URL`` and
   ``STREAMREC_TRITON_URL`` name running ones. The local stack's broker is warmed
   first (``--broker-warm-up``), as a deployment's broker is warm.
3. The feature job (Flink), the feature writer and the inference worker start on
   topics named for this run; the 110,300-event Taobao stream is replayed paced
   by event time, with recommendation requests mixed in.
4. When every request is answered: events and requests in and out, latency
   percentiles, feature age, a few recommendations beside the user's clicks;
   then the parts stop with SIGTERM and a drift check judges the run's features.

Exits 1 if an event or request was lost, duplicated or dead-lettered.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from jobs.datasets import RowAudit, read_dataset
from jobs.demo.drift import drift_lines, run_drift_check
from jobs.demo.ingest import read_back, report
from jobs.demo.loop import (
    RunTopics,
    changelog_counts,
    drop_project_keys,
    free_port,
    log_says,
    part_environment,
    pipeline_parts,
    port_open,
    read_answered,
    read_asked,
    run_project,
    wait_for_answers,
    wait_ready,
    wait_until_quiet,
    warm_up,
)
from jobs.demo.outcome import judge, outcome_lines, outcome_result
from jobs.demo.processes import running
from jobs.demo.services import (
    SERVED_MODEL,
    Services,
    demo_services,
    ensure_model,
    grant_run,
)
from jobs.demo.shown import shown_lines
from jobs.localstack.broker_warmup import warm_broker
from jobs.localstack.process import port_in_use
from jobs.localstack.settings import StackSettings
from jobs.replay.run import ReplayOptions, run_replay
from jobs.replay.verify import compare
from runtime.settings import DEFAULT_MODEL_DIR, MODEL_DIR_ENV, Settings, setting
from schemas.metrics_ports import LOOPBACK, METRICS_PORTS

# Which principal each part runs as on a secured stack (jobs.localstack.roles).
PART_ROLE = {"feature-job": "features", "feature-writer": "writer", "worker": "worker"}
VIEWS = {"user_recent", "user_window", "item_window", "category_window"}


@dataclass(frozen=True)
class DemoSettings(Settings):
    """The ranker the demo serves; the run's own knobs are plain flags."""

    model_dir: Path = setting(
        DEFAULT_MODEL_DIR, env=MODEL_DIR_ENV, help="the ranker (trained here when missing)"
    )
    # The parts' own defaults, so `make observe` scrapes the demo with no configuration.
    worker_metrics_port: int = setting(
        METRICS_PORTS["worker"],
        env="STREAMREC_WORKER_METRICS_PORT",
        help="the worker's /metrics port (0 = any free port)",
    )
    drift_metrics_port: int = setting(
        METRICS_PORTS["drift"],
        env="STREAMREC_DRIFT_METRICS_PORT",
        help="the drift check's /metrics port (0 = any free port)",
    )
    writer_metrics_port: int = setting(
        METRICS_PORTS["writer"],
        env="STREAMREC_FEATURE_WRITER_METRICS_PORT",
        help="the feature writer's /metrics port (0 = any free port)",
    )


def warm_local_broker(services: Services, run_id: str, seconds: float) -> None:
    if seconds <= 0:
        return
    with tqdm(total=round(seconds), unit="s", desc="broker warm-up", file=sys.stderr) as bar:

        def progress(elapsed: float) -> None:
            bar.update(int(elapsed) - bar.n)

        warmed = warm_broker(services.kafka, f"{run_id}.warm-up", seconds, progress)
    print(
        f"broker warmed: {warmed.single_produces} single produces, "
        f"{warmed.batched_records} batched records, {warmed.consumed} fetched",
        file=sys.stderr,
    )


def metrics_port(chosen: int, part: str, variable: str) -> int:
    """``chosen``, or a free port for 0; a clear error if another process holds it."""
    if chosen == 0:
        return free_port()
    if port_in_use(LOOPBACK, chosen):
        raise SystemExit(
            f"error: port {chosen} for the {part}'s /metrics is taken by another process; "
            f"set {variable} to another port, or to 0 for any free one"
        )
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="streamrec-demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--file", type=Path, help="Taobao stream file (default: shared data)")
    parser.add_argument("--request-rate", type=float, default=0.05, help="requests per event")
    parser.add_argument(
        "--speed",
        type=float,
        default=100.0,
        help="replay pace: event time × speed (0 = as fast as possible)",
    )
    parser.add_argument("--limit", type=int, help="replay only the first N events")
    DemoSettings.add_flags(parser)
    parser.add_argument(
        "--answer-timeout",
        type=float,
        default=180.0,
        help="seconds to wait for the last answers after the replay",
    )
    parser.add_argument(
        "--broker-warm-up",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="traffic through the local stack's broker before the run, on a topic of its "
        "own, so that its JIT is warm when latency is measured (0 = none; never done on "
        "configured brokers)",
    )
    parser.add_argument(
        "--keep-stack",
        action="store_true",
        help="leave the stack running, and the run's feature rows in Redis",
    )
    args = parser.parse_args(argv)
    run_id = time.strftime("demo-%Y%m%d-%H%M%S")
    topics = RunTopics.for_run(run_id)
    project = run_project(run_id)
    options = ReplayOptions(
        path=args.file,
        topic=topics.events,
        request_topic=topics.requests,
        request_rate=args.request_rate,
        speed=args.speed,
        limit=args.limit,
    )
    settings = DemoSettings.load(None, args)
    model_dir = settings.model_dir.resolve()
    worker_port = metrics_port(
        settings.worker_metrics_port, "worker", "STREAMREC_WORKER_METRICS_PORT"
    )
    drift_port = metrics_port(
        settings.drift_metrics_port, "drift check", "STREAMREC_DRIFT_METRICS_PORT"
    )
    writer_port = metrics_port(
        settings.writer_metrics_port, "feature writer", "STREAMREC_FEATURE_WRITER_METRICS_PORT"
    )
    ensure_model(model_dir)
    events = list(read_dataset(options.dataset, options.path, RowAudit()))[: args.limit]
    log_dir = StackSettings.from_env().home / "demo" / run_id
    with demo_services(model_dir, args.keep_stack) as services:
        if services.local_kafka:
            warm_local_broker(services, run_id, args.broker_warm_up)
        topics.create(services.kafka)
        grant_run(services, topics, run_id, project)
        env = part_environment(
            services.kafka,
            services.redis_url,
            {
                "STREAMREC_TRITON_URL": services.triton_url,
                "STREAMREC_TRITON_MODEL": SERVED_MODEL,
                "STREAMREC_MODEL_DIR": str(model_dir),
                "STREAMREC_WORKER_REDIS_READ_URL": services.redis_read_url,
            },
        )
        parts = pipeline_parts(
            topics, run_id, model_dir, log_dir, worker_port, writer_port, project
        )
        for part in parts:
            part.env.update(services.env_of(PART_ROLE[part.name]))
        with running(parts, env):
            print(
                f"starting the feature job, writer and worker (logs in {log_dir}); their "
                f"metrics: worker http://{LOOPBACK}:{worker_port}/metrics, writer "
                f"http://{LOOPBACK}:{writer_port}/metrics (`make observe`); the run's "
                f"feature rows: Feast project {project}",
                file=sys.stderr,
            )
            wait_ready(
                parts,
                {
                    "feature job": log_says(parts[0], "job id"),
                    "feature writer": port_open(writer_port),
                    # Its port opens at start; this line once its warm-up is done.
                    "worker": log_says(parts[2], f"polling {topics.requests}"),
                },
            )
            probes = warm_up(
                services.kafka,
                services.redis_url,
                topics.events,
                events[0].ts,
                list(parts),
                project,
            )
            with tqdm(unit="ev", desc="replay", file=sys.stderr) as bar:
                summary = run_replay(options, services.kafka_as("ingest"), on_progress=bar.update)
            wait_for_answers(
                services.kafka, topics.recommendations, summary.requests, parts, args.answer_timeout
            )
            wait_until_quiet(services.kafka, topics.changelog, list(parts))
            asked = read_asked(services.kafka, topics.requests)
            answered = read_answered(services.kafka, topics.recommendations)
            shown = shown_lines(services.redis_url, answered, project)
        consumed, dead_letters = read_back(services.kafka, topics.events, {})
        counts = changelog_counts(services.kafka, topics.changelog)
        trip = compare(probes + events, consumed)
        outcome = judge(asked, answered)
        drift = run_drift_check(
            services.kafka, topics, model_dir, run_id, services.env_of("drift"), drift_port
        )
        if not args.keep_stack:
            drop_project_keys(services.redis_url, project)
    lines = report(trip, dead_letters, (summary.requests, len(asked)))
    lines += [f"{'feature rows: ' + view:<28}{counts.get(view, 0):>14}" for view in sorted(VIEWS)]
    lines += outcome_lines(outcome) + shown + drift_lines(drift)
    print("\n".join(lines))
    ok = (
        trip.exact
        and summary.ok
        and not dead_letters
        and outcome.exact
        and len(asked) == summary.requests
        and counts["user_recent"] == len(consumed)
    )
    print("PASS: the whole loop answered every request once" if ok else "FAIL")
    print(outcome_result(outcome))
    return 0 if ok else 1
