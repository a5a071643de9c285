"""``make soak MINUTES=30``: the whole pipeline for a long while, watched for growth.

The feature job (checkpoints on), the feature writer and the worker run under a
steady load of requests and live events, each lap through the events by new
users. The writer is killed (-9) at a third of the run and the feature job (its
TaskManager) at two thirds; the supervisor restarts both, the job from its
latest checkpoint. Every 30 s the RSS of every process (whole process groups),
Redis ``used_memory``, the newest checkpoint's size and Triton's queue are
sampled. The verdict is each series' growth per minute after the warm-up (for a
killed part, after the warm-up that follows its restart): flat means under 1 MB/min.

Every bound on state is a horizon: the windows' length, the fresh view's state TTL,
the Redis keys' TTLs. With new users throughout, state grows until the horizon and is
flat after it, so a 30-minute run could not tell a bound at 30 minutes, 6 hours or a
week from a leak. The soak therefore runs with the horizons scaled down to minutes
(``COMPRESSED``; ``--production-horizons`` keeps the defaults): the same code paths
expire and evict, and steady state falls inside the run.

The default rates (50 requests/s and 1,000 events/s) are 70% of the operating
point ``make demo`` holds on this two-core box with every part on it (75
requests/s within 1,500 events/s, p99 about 300 ms); the chaos run's 200
requests/s is past it (answers lag by seconds even without a fault).
``--rate``/``--event-rate`` set others.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.demo.loop import RunTopics, log_says, port_open, wait_ready, warm_up, writer_part
from jobs.demo.services import ensure_model
from jobs.localstack.process import read_pidfile
from jobs.localstack.settings import HOST
from runtime.settings import DEFAULT_MODEL_DIR
from schemas.codec import recommendation_codec
from tests.benchmarks.report import print_table, result_line
from tests.chaos.growth import Sample, growth_per_min
from tests.chaos.passes import (
    ChaosEnv,
    drain,
    feature_job,
    mode_settings,
    read_all,
    say,
    worker_part,
    worker_port,
)
from tests.chaos.sampler import Sampler
from tests.chaos.stack import chaos_stack
from tests.chaos.streams import EventLoad, RequestLoad
from tests.chaos.supervisor import kill, supervised
from tests.conftest import REPO_ROOT

FLAT_MB_PER_MIN = 1.0
# Windows of 5 minutes sliding by 1, a fresh-view state TTL of 6 minutes, Redis keys and
# co-visitation sets for 10, the co-visitation window 5 (its per-user guard keys live
# twice that): the pipeline is at its steady state after about 10 minutes.
# Every horizon at most 5 minutes: with keys expiring at that age, Redis settles about
# twice that after the start (its expiry trails the keys' creation), inside the warm-up.
COMPRESSED = {
    "STREAMREC_FEATURES_WINDOW_MS": "120000",
    "STREAMREC_FEATURES_SLIDE_MS": "30000",
    "STREAMREC_FEATURES_STATE_TTL_MS": "150000",
    "STREAMREC_FEATURE_WRITER_KEY_TTL_SECONDS": "300",
    "STREAMREC_FEATURE_WRITER_COVISIT_TTL_SECONDS": "300",
    "STREAMREC_FEATURE_WRITER_COVISIT_WINDOW_MS": "150000",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.chaos.soak",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s")
    parser.add_argument("--event-rate", type=float, default=1000.0, help="events/s")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument(
        "--warmup", type=float, help="minutes left out: state up to its horizons (default: a third)"
    )
    parser.add_argument(
        "--production-horizons",
        action="store_true",
        help="keep the default windows and TTLs (state then grows past a 30-minute run)",
    )
    parser.add_argument("--exactly-once", action="store_true", help="the worker's mode")
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / DEFAULT_MODEL_DIR)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "soak")
    args = parser.parse_args(argv)
    ensure_model(args.model_dir)
    with chaos_stack(args.model_dir, poison=0) as chaos:
        outcome = soak(chaos, args)
    warmup = args.warmup if args.warmup is not None else args.minutes / 3
    # A killed part refills only its own memory, and a restarted JVM loads and compiles
    # its code again: a sixth of the run after its restart.
    again = min(warmup, args.minutes / 6)
    growth = {
        name: growth_per_min(samples, warmup, again) for name, samples in outcome.series.items()
    }
    report(outcome.series, growth, args.out)
    # Resident memory per process group, as PSS (see tests/chaos/sampler.py).
    rss = [g for name, g in growth.items() if name.startswith("pss ") and not math.isnan(g)]
    worst = max(rss, default=math.nan)
    redis_growth = growth.get("redis used_memory", math.nan)
    ok = worst < FLAT_MB_PER_MIN and not outcome.lost and not outcome.crashed
    print("PASS" if ok else "FAIL: memory grows, a request was lost or a part crashed")
    print(
        result_line(
            minutes=f"{args.minutes:g}",
            rss_growth_mb_per_min=f"{worst:.2f}",
            redis_growth_mb_per_min=f"{redis_growth:.2f}",
            requests=outcome.requests,
            answered=outcome.answered,
            lost=outcome.lost,
            crashed=outcome.crashed,
        )
    )
    return 0 if ok else 1


@dataclass(frozen=True)
class Outcome:
    series: dict[str, list[Sample]]
    requests: int
    answered: int
    crashed: int  # exits of parts nobody killed (the planned kills are not counted)

    @property
    def lost(self) -> int:
        return self.requests - self.answered


def soak(chaos: ChaosEnv, args: argparse.Namespace) -> Outcome:
    run_id = f"soak-{time.strftime('%H%M%S')}"
    topics = RunTopics.for_run(run_id)
    topics.create(chaos.kafka)
    log_dir = chaos.log_dir / run_id
    mode = mode_settings(args.exactly_once, log_dir)
    job = feature_job(topics, run_id, log_dir)
    writer = writer_part(topics.changelog, run_id, log_dir)
    # The heap is committed at start (-Xms = -Xmx); touched too, so the job's RSS is
    # its size from the first minute and the heap's own use is a series of its own.
    job.env["JVM_ARGS"] = "-XX:+AlwaysPreTouch"
    if not args.production_horizons:
        job.env.update(COMPRESSED)
        writer.env.update(COMPRESSED)
    worker = worker_part(topics, run_id, chaos.model_dir, log_dir, "worker", **mode)
    services = chaos.stack.services
    pids = {name: (lambda s=services[name]: read_pidfile(s.pidfile)) for name in services
            if name in ("kafka", "redis", "triton")}  # fmt: skip
    pids.update({part.name: (lambda p=part: p.pid) for part in (job, writer, worker)})
    metrics_url = f"http://{HOST}:{chaos.stack.settings.triton_metrics_port}"
    with supervised(chaos.env, [job, writer, worker]) as supervisor:
        say(f"soak: parts starting (logs in {log_dir})")
        ready = {"feature job": log_says(job, "job id"), "worker": port_open(worker_port(worker))}
        wait_ready([job, writer, worker], ready)
        warm_up(chaos.kafka, chaos.redis_url, topics.events, int(time.time() * 1000), [job])
        supervisor.start()
        sampler = Sampler(pids, chaos.redis_url, log_dir / "checkpoints", metrics_url, args.every,
                          jvms=frozenset({"kafka", job.name}))  # fmt: skip
        events = EventLoad(chaos.kafka, topics.events, args.event_rate, chaos.events,
                           new_users=True)  # fmt: skip
        requests = RequestLoad(chaos.kafka, topics.requests, args.rate, chaos.users, "soak",
                               user_offset=events.user_offset)  # fmt: skip
        sampler.start()
        events.start()
        requests.start()
        seconds = args.minutes * 60
        for part in (writer, job):  # at a third, then at two thirds
            time.sleep(seconds / 3)
            say(f"soak: kill -9 {part.name}")
            kill(supervisor.release(part))
            supervisor.start_part(part)
        time.sleep(seconds / 3)
        requests.stop()
        events.stop()
        say(f"soak: load stopped; {len(requests.sent)} requests sent, waiting for answers")
        drain(chaos.kafka, topics, len(requests.sent), stall_s=60)
        series = sampler.stop()
    answers = read_all(chaos.kafka, topics.recommendations, recommendation_codec().decode)
    answered = {a.request_id for a in answers} & requests.sent.keys()
    for crash in supervisor.crashed:
        print(f"crashed during the soak: {crash}", file=sys.stderr)
    return Outcome(series, len(requests.sent), len(answered), len(supervisor.crashed))


def report(series: dict[str, list[Sample]], growth: dict[str, float], out: Path) -> None:
    rows = [
        [name, f"{samples[0][1]:.1f}", f"{samples[-1][1]:.1f}", f"{growth[name]:+.2f}"]
        for name, samples in sorted(series.items())
    ]
    print_table(["series", "first", "last", "growth/min (settled)"], rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(9, 5))
    for name, samples in sorted(series.items()):
        if name != "triton queue":
            axes.plot([s[0] for s in samples], [s[1] for s in samples], label=name)
    axes.set_xlabel("minutes")
    axes.set_ylabel("MB")
    axes.set_yscale("log")
    axes.set_title("soak: memory of every process and store")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / "soak.png", dpi=120)
    plt.close(figure)
    # The samples themselves, to look into a series the table flags.
    (out / "samples.json").write_text(json.dumps(series, indent=1))
    print(f"plot: {out / 'soak.png'}; samples: {out / 'samples.json'}")


if __name__ == "__main__":
    raise SystemExit(main())
