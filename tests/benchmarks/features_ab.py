"""``make bench-features-ab REVS="before=REV after=REV"``: the feature job's Java functions
of two (or more) revisions, side by side on one stream.

The box's pace drifts by a third within half an hour, more than most changes to the
functions, so two ``make bench-features`` runs cannot tell them apart. This replays
the Taobao stream (looped) once, builds each revision's functions jar (``udf/``, from
a temporary git worktree of that revision; ``.`` is the working tree), and runs the
job as deployed with each jar in turn, alternating the order every round. Only the
functions jar differs between runs: the Python side is the working tree's. Rates
are as ``make bench-features`` counts them: the whole run, and after its first
quarter (warm).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from jobs.features.functions_jar import SOURCE_DIR, functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.localstack.settings import StackSettings
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from tests.benchmarks.features import run_bounded
from tests.benchmarks.report import print_table, result_line, save_bar_plot
from tests.support.kafka_session import kafka_for_run

REPO = Path(__file__).resolve().parents[2]
WORKING_TREE = "."


def parse_revs(given: Sequence[str]) -> dict[str, str]:
    """``label=rev`` pairs, in order; labels must differ."""
    revs: dict[str, str] = {}
    for pair in given:
        label, sep, rev = pair.partition("=")
        if not sep or not label or not rev:
            raise ValueError(f"expected label=rev, got {pair!r}")
        if label in revs:
            raise ValueError(f"label {label!r} given twice")
        revs[label] = rev
    if len(revs) < 2:
        raise ValueError("give at least two label=rev pairs")
    return revs


def round_order(labels: Sequence[str], round_index: int) -> list[str]:
    """The run order of one round: as given, then reversed, so no label always goes first."""
    return list(labels) if round_index % 2 == 0 else list(reversed(labels))


@contextmanager
def revision_jar(rev: str, cache: Path) -> Iterator[Path]:
    """The functions jar of ``rev`` (built once per source digest; ``.``: the working tree)."""
    if rev == WORKING_TREE:
        yield functions_jar(cache)
        return
    with tempfile.TemporaryDirectory(prefix="features-ab-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree),
                        rev], check=True)  # fmt: skip
        try:
            yield functions_jar(cache, tree / SOURCE_DIR.relative_to(REPO))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                           check=False)  # fmt: skip


def run_once(
    kafka: KafkaSettings, source: str, events: int, jars: list[Path]
) -> tuple[float, float]:
    """One bounded run of the deployed job over ``source``: (events/s whole, events/s warm)."""
    run = run_bounded(kafka, "jobs.features", source, f"{source}-{uuid.uuid4().hex[:6]}",
                      events, jars)  # fmt: skip
    return run.rate, run.warm or 0.0


def side_by_side(
    cache: Path, jars: dict[str, Path], rounds: int, loops: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each label's events/s (whole run, warm) in every round, on one replayed stream."""
    whole: dict[str, list[float]] = {label: [] for label in jars}
    warm: dict[str, list[float]] = {label: [] for label in jars}
    with kafka_for_run() as kafka:
        source = f"bench-features-ab-{uuid.uuid4().hex[:8]}"
        ensure_topics(kafka, [TopicSpec(source, 1)])
        events = run_replay(ReplayOptions(topic=source, loops=loops), kafka).events
        print(f"{events:,} events", file=sys.stderr)
        connector = kafka_connector_jar(cache)
        for round_index in range(rounds):
            for label in round_order(list(jars), round_index):
                rate, warm_now = run_once(kafka, source, events, [connector, jars[label]])
                whole[label].append(rate)
                warm[label].append(warm_now)
                print(f"round {round_index + 1} {label}: {rate:,.0f} events/s, warm "
                      f"{warm_now:,.0f}", file=sys.stderr, flush=True)  # fmt: skip
    return whole, warm


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.features_ab", description=__doc__
    )
    parser.add_argument("revs", nargs="+", help="label=rev (a git revision, or . for the tree)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each revision")
    parser.add_argument("--loops", type=int, default=8, help="passes over the stream file")
    parser.add_argument("--plot", type=Path, default=Path("reports/bench-features-ab.png"))
    args = parser.parse_args(argv)
    try:
        revs = parse_revs(args.revs)
    except ValueError as exc:
        parser.error(str(exc))
    cache = StackSettings.from_env().cache_dir
    with tempfile.TemporaryDirectory(prefix="features-ab-jars-") as keep:
        # Each jar is copied out of its worktree's build before the worktree goes.
        jars: dict[str, Path] = {}
        for label, rev in revs.items():
            with revision_jar(rev, cache) as jar:
                jars[label] = Path(keep) / f"{label}.jar"
                jars[label].write_bytes(jar.read_bytes())
            print(f"{label}: {rev}", file=sys.stderr)
        whole, warm = side_by_side(cache, jars, args.rounds, args.loops)
    means = {label: statistics.mean(rates) for label, rates in whole.items()}
    warm_means = {label: statistics.mean(rates) for label, rates in warm.items()}
    first = next(iter(revs))
    rows = [(label, revs[label], *(f"{r:,.0f}" for r in whole[label]), f"{means[label]:,.0f}",
             f"{warm_means[label]:,.0f}", f"{means[label] / means[first]:.2f}")
            for label in revs]  # fmt: skip
    rounds = [f"round {i + 1}" for i in range(args.rounds)]
    print_table(["build", "rev", *rounds, "mean", "mean, warm", f"vs {first}"], rows)
    save_bar_plot(args.plot, "Feature job side by side (events/s)",
                  list(revs), {"whole run": list(means.values()),
                               "warm": list(warm_means.values())})  # fmt: skip
    print(f"plot: {args.plot}")
    last = list(revs)[-1]
    print(result_line(**{f"{label}_events_per_s": means[label] for label in revs},
                      **{f"{label}_warm_events_per_s": warm_means[label] for label in revs},
                      ratio=f"{means[last] / means[first]:.3f}",
                      warm_ratio=f"{warm_means[last] / warm_means[first]:.3f}"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
