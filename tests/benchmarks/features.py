"""``make bench-features``: feature-job throughput and freshness, with the other implementation.

Throughput: the Taobao stream, looped (8 times, 882,400 events), on one topic;
each job reads it to the end (bounded) and its rate is events over the span
between its first and last changelog record (so JVM start and job build are left
out). Side by side, every view: the job as deployed (the keyed Java functions,
``--window-mode changed``), the same functions writing every window (``every``),
and Flink SQL (``sql``: HOP windows and an OVER window, the other implementation).
The job as deployed runs ``--deployed-runs`` times (3), once per round, the others
once in the first: one run of it moved by up to a third with the box (41,004 and
58,441 events/s for one build, an hour apart), so ``events_per_s`` is the median and
the lowest and highest are printed beside it.
Then, on one pass, the user windows alone from the keyed functions and from the
Python DataStream job (``tests.benchmarks.baselines.datastream_features``), whose
outputs must be equal row for row, or the benchmark fails (exit 1, first
differing rows). Each run's changelog rows per event are reported: ``changed``
writes a key's window only where events enter or leave it, and of those one
watermark advance passes only the newest.

Freshness: the job as deployed and the feature writer run live; events are replayed at
a steady rate with their times moved to now, and a probe reads the online store
(Redis, in Feast's format) until each sampled click is readable. A sampled click
still unreadable 30 s after the last send is a failure: counted in
``freshness_unreadable_rate`` and at +infinity in the percentiles. The job's share
(``freshness_job_p50_ms``, ``freshness_job_p99_ms``) is every measured event's time
from being sent to the job's fresh-view row (the changelog record's CreateTime); the
rest is the broker, the feature writer and Redis.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from confluent_kafka import Message

from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.localstack.settings import StackSettings
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from tests.benchmarks.freshness import FRESH_ROW_PREFIX, job_latencies_ms, measure_freshness
from tests.benchmarks.report import (
    BenchmarkFailure,
    fail,
    percentile,
    print_table,
    require_same_rows,
    result_line,
    save_bar_plot,
)
from tests.support.kafka_session import kafka_for_run

REPO = Path(__file__).resolve().parents[2]


def run_module(module: str, args: list[str], kafka: KafkaSettings, timeout_s: float = 1800) -> None:
    env = {**os.environ, "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers}
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{result.stderr[-3000:]}")


def output_rate(messages: list[Message], events: int) -> float:
    """Events per second over the span of the job's output (broker append times)."""
    stamps = [m.timestamp()[1] for m in messages]
    return events / ((max(stamps) - min(stamps)) / 1000)


def warm_rate(fresh_stamps_ms: list[int], skip: float = 0.25) -> float | None:
    """Events/s after the first ``skip`` of the fresh view's rows (None: too few to tell).

    The JVM compiles the job's hot code during its first seconds (the JIT took a sixth
    of a 30-second run's CPU), which a job that runs for days pays once: this is the
    rate after it, beside the whole run's.
    """
    stamps = sorted(fresh_stamps_ms)
    first = int(len(stamps) * skip)
    if len(stamps) - first < 2 or stamps[-1] == stamps[first]:
        return None
    return (len(stamps) - 1 - first) / ((stamps[-1] - stamps[first]) / 1000)


def fresh_row_stamps(messages: list[Message]) -> list[int]:
    """Broker append times (ms) of the fresh view's rows among the job's output."""
    return [m.timestamp()[1] for m in messages if (m.key() or b"").startswith(FRESH_ROW_PREFIX)]


# label -> (module, extra flags). The first is the job as deployed; the user-window pair
# runs on a shorter stream (the DataStream job is slow), its outputs compared row for row.
RUNS: dict[str, tuple[str, list[str]]] = {
    "keyed functions, changed windows (deployed)": ("jobs.features", []),
    "keyed functions, every window": ("jobs.features", ["--window-mode", "every"]),
    "sql, every window": ("jobs.features", ["--window-mode", "sql"]),
}
PAIR: dict[str, tuple[str, list[str]]] = {
    "keyed functions, user windows": (
        "jobs.features", ["--window-mode", "every", "--views", "user_window"]),
    "datastream, user windows": ("tests.benchmarks.baselines.datastream_features", []),
}  # fmt: skip
DEPLOYED, OTHER = "keyed functions, changed windows (deployed)", "sql, every window"


@dataclass(frozen=True)
class BoundedRun:
    """One job's run to the end of its source: events/s (whole, warm) and its output."""

    rate: float
    warm: float | None
    values: list[bytes]


def run_bounded(
    kafka: KafkaSettings, module: str, source: str, out: str, events: int, jars: list[Path],
    extra: Sequence[str] = (),
) -> BoundedRun:  # fmt: skip
    """``module`` (``jobs.features`` or a baseline) over ``source`` into a new topic ``out``."""
    # Stamped by the broker on arrival: the DataStream sink would stamp event times.
    ensure_topics(kafka, [TopicSpec(out, 1, {"message.timestamp.type": "LogAppendTime"})])
    args = ["--source-topic", source, "--changelog-topic", out, "--bounded"]
    if module == "jobs.features":
        args += ["--dead-letter-topic", out + "-dlq", "--group-id", out]
    for jar in jars:
        args += ["--jar", str(jar)]
    run_module(module, [*args, *extra], kafka)
    messages = list(read_range(kafka, out, {}, high_watermarks(kafka, out)))
    return BoundedRun(output_rate(messages, events), warm_rate(fresh_row_stamps(messages)),
                      [m.value() for m in messages])  # fmt: skip


def run_order(labels: Sequence[str], repeats: dict[str, int]) -> list[str]:
    """Rounds of the labels in order, a label in as many rounds as it repeats (default 1)."""
    rounds = max((repeats.get(label, 1) for label in labels), default=0)
    return [label for r in range(rounds) for label in labels if r < repeats.get(label, 1)]


@dataclass(frozen=True)
class Runs:
    """Every run of each label over one stream: events/s (whole, warm), the first run's output."""

    rates: dict[str, list[float]]
    warm: dict[str, list[float | None]]
    outputs: dict[str, list[bytes]]
    events: int

    def rate(self, label: str) -> float:
        return median(self.rates[label])

    def warm_rate(self, label: str) -> float | None:
        known = [w for w in self.warm[label] if w is not None]
        return median(known) if known else None


def run_all(
    kafka: KafkaSettings, cache: Path, loops: int, runs: dict[str, tuple[str, list[str]]],
    repeats: dict[str, int] | None = None,
) -> Runs:  # fmt: skip
    """Each run over one stream of ``loops`` passes, in :func:`run_order`."""
    source = f"bench-features-{uuid.uuid4().hex[:8]}"
    ensure_topics(
        kafka, [TopicSpec(source, 1)]
    )  # one partition: see tests.benchmarks.baselines.datastream_features
    events = run_replay(ReplayOptions(topic=source, loops=loops), kafka).events
    connector, functions = kafka_connector_jar(cache), functions_jar(cache)
    rates: dict[str, list[float]] = {label: [] for label in runs}
    warm: dict[str, list[float | None]] = {label: [] for label in runs}
    outputs: dict[str, list[bytes]] = {}
    for count, label in enumerate(run_order(list(runs), repeats or {})):
        module, extra = runs[label]
        jars = [connector, functions] if module == "jobs.features" else [connector]
        print(f"running {label} over {events:,} events", file=sys.stderr)
        run = run_bounded(kafka, module, source, f"{source}-{count}", events, jars, extra)
        rates[label].append(run.rate)
        warm[label].append(run.warm)
        outputs.setdefault(label, run.values)
    return Runs(rates, warm, outputs, events)


def throughput(
    kafka: KafkaSettings, cache: Path, loops: int, check_loops: int, deployed_runs: int
) -> tuple[Runs, dict[str, float]]:
    """Every run and the rows per event of each label; raises if the user windows differ."""
    main_runs = run_all(kafka, cache, loops, RUNS, {DEPLOYED: deployed_runs})
    rows_per_event = {label: len(rows) / main_runs.events
                      for label, rows in main_runs.outputs.items()}  # fmt: skip
    pair = run_all(kafka, cache, check_loops, PAIR)
    ours, datastream = PAIR
    require_same_rows((ours, datastream), pair.outputs[ours], pair.outputs[datastream])
    rows_per_event |= {label: len(rows) / pair.events for label, rows in pair.outputs.items()}
    merged = Runs(main_runs.rates | pair.rates, main_runs.warm | pair.warm,
                  main_runs.outputs | pair.outputs, main_runs.events)  # fmt: skip
    return merged, rows_per_event


@contextmanager
def live_pipeline(
    kafka: KafkaSettings, redis_url: str, cache: Path, writers: int = 1
) -> Iterator[str]:
    """The job and ``writers`` feature writers (one group) on fresh topics; yields the source."""
    source = f"bench-fresh-{uuid.uuid4().hex[:8]}"
    changelog = source + "-features"
    ensure_topics(kafka, [TopicSpec(source, 4), TopicSpec(changelog, 4)])
    env = {**os.environ, "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
           "STREAMREC_REDIS_URL": redis_url}  # fmt: skip
    job = subprocess.Popen(
        [sys.executable, "-m", "jobs.features", "--source-topic", source, "--changelog-topic",
         changelog, "--dead-letter-topic", source + "-dlq", "--group-id", source,
         "--jar", str(kafka_connector_jar(cache)), "--jar", str(functions_jar(cache))],
        cwd=REPO, env=env, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    writer = [sys.executable, "-m", "jobs.feature_writer", "--topic", changelog,
              "--group-id", source, "--batch-timeout", "0.02"]  # fmt: skip

    def spawn_writer() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            writer, cwd=REPO, env=env, stderr=subprocess.DEVNULL, start_new_session=True
        )

    started = [job] + [spawn_writer() for _ in range(writers)]
    try:
        yield source
    finally:
        for process in started:
            os.killpg(process.pid, 15)
            process.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.features", description=__doc__
    )
    # Long enough that the JVM's warm-up (its JIT compiler took a sixth of the CPU of a
    # 30 s run) is a small part of the measured span.
    parser.add_argument("--loops", type=int, default=8, help="passes over the stream file")
    parser.add_argument(
        "--check-loops",
        type=int,
        default=1,
        help="passes for the user-window pair compared row for row",
    )
    parser.add_argument(
        "--deployed-runs",
        type=int,
        default=3,
        help="runs of the job as deployed (events_per_s: their median)",
    )
    parser.add_argument("--rate", type=int, default=5000, help="events/s for freshness")
    parser.add_argument(
        "--writers",
        type=int,
        default=1,
        help="feature writers (one consumer group) in the freshness run",
    )
    parser.add_argument("--seconds", type=int, default=20, help="freshness run length")
    parser.add_argument("--plot", type=Path, default=Path("reports/bench-features.png"))
    args = parser.parse_args(argv)
    stack = StackSettings.from_env()
    redis_url = os.environ.get("STREAMREC_REDIS_URL", stack.redis_url)
    try:
        with kafka_for_run() as kafka:
            runs, rows_per_event = throughput(
                kafka, stack.cache_dir, args.loops, args.check_loops, args.deployed_runs
            )
            # The throughput runs leave gigabytes of topic data for the kernel to write
            # back, which then stalls every fsync of the store (appendfsync always): the
            # freshness run would measure the previous runs' disk (p99 1.4-1.9 s after
            # 3 GB written, 0.8-0.9 s after a sync, in one stack). Written out first.
            os.sync()
            with live_pipeline(kafka, redis_url, stack.cache_dir, args.writers) as source:
                fresh = measure_freshness(kafka, redis_url, source, args.rate, args.seconds)
            job_share = job_latencies_ms(kafka, source + "-features", fresh.measured_from_ms)
    except BenchmarkFailure as failure:
        return fail(failure)
    p50, p99 = fresh.p(50), fresh.p(99)
    job_p50, job_p99 = percentile(job_share, 50), percentile(job_share, 99)
    rates = {label: runs.rate(label) for label in runs.rates}
    warm = {label: runs.warm_rate(label) for label in runs.rates}
    rows = [(k, f"{v:,.0f}", "" if warm[k] is None else f"{warm[k]:,.0f}",
             f"{rows_per_event[k]:.2f}", ", ".join(f"{r:,.0f}" for r in runs.rates[k]))
            for k, v in rates.items()]  # fmt: skip
    print_table(["implementation", "events/s (median)", "after the first quarter",
                 "changelog rows/event", "each run"], rows)  # fmt: skip
    print_table(["freshness (event produced -> readable)", "ms"],
                [("p50", f"{p50:.0f}"), ("p99", f"{p99:.0f}"), ("samples", str(fresh.samples)),
                 ("unreadable", f"{fresh.unreadable} ({fresh.unreadable_rate:.2%})"),
                 ("the job's share (event -> changelog row), p50", f"{job_p50:.0f}"),
                 ("the job's share, p99", f"{job_p99:.0f}"),
                 ("the job's share, events", str(len(job_share)))])  # fmt: skip
    save_bar_plot(args.plot, "Feature job throughput (events/s, one partition)",
                  list(rates), {"events/s": list(rates.values())})  # fmt: skip
    print(f"plot: {args.plot}")
    print(result_line(events_per_s=rates[DEPLOYED], deployed_runs=len(runs.rates[DEPLOYED]),
                      events_per_s_lowest=min(runs.rates[DEPLOYED]),
                      events_per_s_highest=max(runs.rates[DEPLOYED]), freshness_p50_ms=p50,
                      freshness_p99_ms=p99, freshness_unreadable=fresh.unreadable,
                      freshness_job_p50_ms=job_p50, freshness_job_p99_ms=job_p99,
                      freshness_unreadable_rate=f"{fresh.unreadable_rate:.4f}",
                      warm_events_per_s=warm[DEPLOYED] or 0,
                      other_impl_events_per_s=rates[OTHER],
                      changelog_rows_per_event=f"{rows_per_event[DEPLOYED]:.2f}",
                      other_impl_rows_per_event=f"{rows_per_event[OTHER]:.2f}",
                      datastream_user_windows_events_per_s=rates["datastream, user windows"],
                      keyed_user_windows_events_per_s=rates["keyed functions, user windows"],
                      user_windows_equal=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
