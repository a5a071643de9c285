"""`make bench-scale`: worker throughput for 1, 2 and 4 workers in one consumer group.

The pipeline of ``make bench-e2e`` (its own Kafka, Redis and Triton on free ports,
real Taobao users' features written): one group per worker count, each reading its
own 8-partition request topic, all started at once so that none is measured cold.
Saturation bursts go to one group at a time, in alternating rounds (median kept,
the machine is shared). Scaling efficiency is the n-worker rate over n times the
one-worker rate, and over min(n, cores) times it: on a box with fewer cores than
workers the second figure is the one the software answers for.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from runtime.kafka import KafkaSettings
from tests.benchmarks.e2e import Collector, cycle, measure, pipeline_up
from tests.benchmarks.measured import Measured, median_burst
from tests.benchmarks.report import print_table, result_line, save_bar_plot
from tests.conftest import REPO_ROOT, free_port
from tests.inference.worker.harness import WorkerProcess, WorkerTopics
from tests.inference.worker.world import World

REPORT = REPO_ROOT / "reports" / "bench-scale.png"
PARTITIONS = 8


class Group:
    """``size`` worker processes in one consumer group on a topic of their own."""

    def __init__(self, size: int, base: dict[str, str], kafka: KafkaSettings, logs: Path) -> None:
        self.size = size
        self.topics = WorkerTopics.create(kafka, partitions=PARTITIONS)
        group = f"bench-scale-{size}-{uuid.uuid4().hex[:6]}"
        env = {**base, "STREAMREC_WORKER_REQUESTS_TOPIC": self.topics.requests,
               "STREAMREC_WORKER_OUTPUT_TOPIC": self.topics.output,
               "STREAMREC_WORKER_GROUP_ID": group}  # fmt: skip
        self.workers = [
            WorkerProcess(
                {**env, "STREAMREC_WORKER_METRICS_PORT": str(free_port())},
                logs / f"scale-{size}-{n}.log",
            )
            for n in range(size)
        ]
        self.collector = Collector(kafka, self.topics.output)

    def close(self) -> None:
        self.collector.close()
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.terminate(120)
            worker.close()


def warm_up(group: Group, kafka: KafkaSettings, world: World) -> None:
    """Requests over every partition until all are answered: each worker holds partitions."""
    count = 40 * group.size
    warm = measure(kafka, group.topics, group.collector, cycle(world.users, count),
                   f"warm-{group.size}", None, 300)  # fmt: skip
    if warm.answered < count:
        logs = "\n".join(w.output()[-1500:] for w in group.workers)
        raise RuntimeError(f"{group.size} workers missed the warm-up:\n{logs}")


def run(args: argparse.Namespace, tmp: Path) -> dict[int, list[Measured]]:
    sizes = [int(n) for n in args.workers.split(",")]
    with pipeline_up(args, tmp) as (kafka, world, base):
        groups = [Group(size, base, kafka, tmp) for size in sizes]
        try:
            for group in groups:
                warm_up(group, kafka, world)
            bursts: dict[int, list[Measured]] = {size: [] for size in sizes}
            for round_no in range(args.rounds):
                for group in groups:
                    burst = measure(kafka, group.topics, group.collector,
                                    cycle(world.users, args.burst),
                                    f"sat-{group.size}-{round_no}", None, args.timeout)  # fmt: skip
                    bursts[group.size].append(burst)
                    print(f"round {round_no}, {group.size} worker(s): {burst.rps:.0f} rps, "
                          f"{burst.sent - burst.answered} unanswered, {burst.degraded} degraded",
                          flush=True)  # fmt: skip
            return bursts
        finally:
            for group in groups:
                group.close()


def report(bursts: dict[int, list[Measured]], cores: int) -> None:
    medians = {size: median_burst(runs) for size, runs in bursts.items()}
    one = medians[min(medians)].rps
    rows = []
    for size, m in sorted(medians.items()):
        per_worker = m.rps / (size * one) if one else 0.0
        per_core = m.rps / (min(size, cores) * one) if one else 0.0
        rows.append([str(size), f"{m.rps:.0f}", f"{m.rps / one if one else 0:.2f}x",
                     f"{per_worker:.0%}", f"{per_core:.0%}", f"{m.p(99):.0f}",
                     f"{m.sent - m.answered}", f"{m.degraded}"])  # fmt: skip
    header = ["workers", "rps (median)", "vs one", "efficiency per worker",
              f"per core ({cores})", "burst p99 ms", "unanswered", "degraded"]  # fmt: skip
    print_table(header, rows)
    save_bar_plot(
        REPORT,
        f"worker throughput on {PARTITIONS} partitions, {cores} cores (requests/s)",
        [f"{size} worker(s)" for size in sorted(medians)],
        {"rps": [medians[size].rps for size in sorted(medians)]},
    )
    print(f"plot: {REPORT}")
    values: dict[str, float | str] = {"cores": cores}
    for size, m in sorted(medians.items()):
        values[f"rps_{size}"] = m.rps
    top = max(medians)
    values["efficiency_per_worker"] = f"{medians[top].rps / (top * one):.2f}" if one else "nan"
    values["efficiency_per_core"] = (
        f"{medians[top].rps / (min(top, cores) * one):.2f}" if one else "nan"
    )
    print(result_line(**values))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workers", default="1,2,4", help="group sizes to measure")
    parser.add_argument("--events", type=int, default=20_000, help="stream events for features")
    parser.add_argument("--burst", type=int, default=2000, help="requests per saturation burst")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    parser.add_argument("--timeout", type=float, default=240, help="wait for answers (s)")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per request")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        bursts = run(args, Path(tmp_name))
    report(bursts, os.cpu_count() or 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
