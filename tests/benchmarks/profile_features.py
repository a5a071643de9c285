"""``make profile-features``: where the feature job's CPU goes, per operator chain and JVM service.

Replays the Taobao stream (looped) into a fresh topic, runs the job over it to the
end (bounded), and samples every thread of its JVM once a second. The table is
each thread group's share of the CPU used while the job was writing (from its
first changelog record to its last: start-up and planning left out): Flink's
tasks are named after their operator chains; "C2 CompilerThre" is the JIT
compiler, "GC Thread" and "G1 ..." the collector. ``--jfr FILE`` also records a
Java Flight Recording (open it in JDK Mission Control for flame graphs per
thread). Flags after ``--`` go to the job (``-- --window-mode sql``).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.localstack.settings import StackSettings
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from tests.benchmarks.features import run_module
from tests.benchmarks.report import BenchmarkFailure, fail, print_table, result_line, save_bar_plot
from tests.benchmarks.thread_cpu import ThreadSampler, cpu_between, descendant_named, within
from tests.support.kafka_session import kafka_for_run

# The class PyFlink's JVM runs; the broker kafka_for_run may start is a java child too.
GATEWAY_CLASS = "org.apache.flink.client.python.PythonGatewayServer"


def job_jvm() -> int | None:
    """The pid of the JVM our job process started (PyFlink's gateway), once it exists."""
    return descendant_named(os.getpid(), "java", command_has=GATEWAY_CLASS)


def output_span(kafka: KafkaSettings, topic: str) -> tuple[float, float, int]:
    """(first, last) broker append time in seconds of the job's output, and its record count."""
    stamps = [m.timestamp()[1] / 1000 for m in
              read_range(kafka, topic, {}, high_watermarks(kafka, topic))]  # fmt: skip
    if not stamps:
        raise BenchmarkFailure(f"the job wrote nothing to {topic}")
    return min(stamps), max(stamps), len(stamps)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, job_flags = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv \
        else (argv, [])  # fmt: skip
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.profile_features",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("--loops", type=int, default=8, help="passes over the stream file")
    parser.add_argument("--jfr", type=Path, help="also write a Java Flight Recording here")
    parser.add_argument("--plot", type=Path, default=Path("reports/profile-features.png"))
    args = parser.parse_args(ours)
    cache = StackSettings.from_env().cache_dir
    if args.jfr:
        recording = f"-XX:StartFlightRecording=filename={args.jfr.resolve()},settings=profile"
        os.environ["JVM_ARGS"] = f"{os.environ.get('JVM_ARGS', '')} {recording}".strip()
    try:
        with kafka_for_run() as kafka:
            source = f"profile-features-{uuid.uuid4().hex[:8]}"
            ensure_topics(kafka, [TopicSpec(source, 1)])
            events = run_replay(ReplayOptions(topic=source, loops=args.loops), kafka).events
            out = source + "-out"
            ensure_topics(kafka, [TopicSpec(out, 1, {"message.timestamp.type": "LogAppendTime"})])
            jars = [kafka_connector_jar(cache), functions_jar(cache)]
            flags = ["--source-topic", source, "--changelog-topic", out, "--bounded",
                     "--dead-letter-topic", out + "-dlq", "--group-id", out,
                     *(flag for jar in jars for flag in ("--jar", str(jar)))]  # fmt: skip
            print(f"running the job over {events:,} events", file=sys.stderr)
            with ThreadSampler(job_jvm) as sampler:
                run_module("jobs.features", [*flags, *job_flags], kafka)
            first, last, rows = output_span(kafka, out)
    except BenchmarkFailure as failure:
        return fail(failure)
    span = within(sampler.samples, first, last)
    if span is None:
        return fail(BenchmarkFailure("the job ran too briefly to sample; raise --loops"))
    start, end = span
    used = cpu_between(start, end)
    total, seconds = sum(cpu for _, cpu in used), end.at - start.at
    table = [(name, f"{cpu:.1f}", f"{cpu / total:.1%}", f"{cpu / seconds:.2f}")
             for name, cpu in used[:15]]  # fmt: skip
    print_table(["thread group (task = operator chain)", "CPU s", "share", "cores"], table)
    save_bar_plot(args.plot, "Feature job CPU by thread group (share while writing)",
                  [name for name, _ in used[:10]],
                  {"share": [cpu / total for _, cpu in used[:10]]})  # fmt: skip
    print(f"plot: {args.plot}" + (f"; recording: {args.jfr}" if args.jfr else ""))
    per_event_us = total / seconds * (last - first) / events * 1e6
    print(result_line(events_per_s=events / (last - first), cpu_us_per_event=per_event_us,
                      cores=f"{total / seconds:.2f}",
                      changelog_rows_per_event=f"{rows / events:.2f}"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
