"""``make chaos``: the fault suite end to end on the real stack.

1. Unit fuzzing: the codec fuzz and the Java parser parity tests (10,000 events
   and 10,000 requests by default), as pytest runs them.
2. A fault pass per delivery mode: the feature job, the writer and a worker under
   200 requests/s and 200 events/s (poison mixed into both), through the
   schedule: broker SIGTERM (20 s), Redis kill -9 (restarted after 5 s; every
   key and out-of-stock mark must survive), Redis SIGSTOP (10 s), Triton SIGSTOP
   (15 s), Triton kill -9 and restart, broker kill -9 (45 s, past the flush
   timeout). A supervisor restarts any part that exits; an exit other than the
   worker's restart code is a crash.
3. The churn pass: exactly-once workers on four partitions at 300 requests/s for
   three minutes, a worker added, stopped (SIGTERM) or killed (-9) every 20 s.

Prints a table per fault and per pass, writes a plot, and ends with the RESULT
line. Exits 1 when a goal is missed (lost, duplicated in exactly-once mode,
crashed, dead letters missing, valid requests dead-lettered, store keys lost,
fewer than 20,000 fuzz inputs).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from inference.worker.kafka_io import AUTO_COMMIT_INTERVAL_MS
from inference.worker.settings import WorkerSettings
from jobs.demo.services import ensure_model
from runtime.settings import DEFAULT_MODEL_DIR
from tests.benchmarks.report import print_table, result_line, save_bar_plot
from tests.chaos.faults import SCHEDULE, schedule
from tests.chaos.ledger import Ledger, Totals, totals
from tests.chaos.passes import ChurnConfig, PassConfig, churn_pass, fault_pass, say
from tests.chaos.stack import chaos_stack
from tests.conftest import REPO_ROOT

# The worker's defaults: its batch size, and its background commit's interval.
BATCH_SIZE = WorkerSettings.batch_size
COMMIT_S = AUTO_COMMIT_INTERVAL_MS / 1000
UNIT_FUZZ_TESTS = ["tests/schemas/test_codec_fuzz.py", "tests/jobs/features/test_parser_parity.py"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rate", type=float, default=200.0, help="requests/s in fault passes")
    parser.add_argument("--event-rate", type=float, default=200.0, help="events/s")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds between faults")
    parser.add_argument("--modes", default="exactly-once,at-least-once", help="fault passes")
    parser.add_argument(
        "--faults", default=",".join(SCHEDULE), help="the faults of a pass, in order (comma list)"
    )
    parser.add_argument("--churn-seconds", type=float, default=180.0, help="0: no churn pass")
    parser.add_argument("--churn-rate", type=float, default=300.0, help="requests/s in churn")
    parser.add_argument("--fuzz-examples", type=int, default=10_000, help="per record type")
    parser.add_argument("--poison", type=int, default=2_000, help="poison inputs per type")
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / DEFAULT_MODEL_DIR)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "chaos")
    args = parser.parse_args(argv)

    fuzzed = unit_fuzz(args.fuzz_examples)
    ensure_model(args.model_dir)
    ledgers: list[Ledger] = []
    with chaos_stack(args.model_dir, args.poison) as chaos:
        config = PassConfig(rate=args.rate, event_rate=args.event_rate, settle_s=args.settle)
        for mode in filter(None, args.modes.split(",")):
            ledgers.append(fault_pass(chaos, mode == "exactly-once", schedule(args.faults), config))
        if args.churn_seconds > 0:
            churn = ChurnConfig(rate=args.churn_rate, seconds=args.churn_seconds)
            ledgers.append(churn_pass(chaos, churn))
    result = totals(ledgers, fuzzed)
    bounds = {
        ledger.name: ledger.duplicate_bound(BATCH_SIZE, args.rate, COMMIT_S) for ledger in ledgers
    }
    within = all(
        ledger.duplicated <= bounds[ledger.name] for ledger in ledgers if not ledger.exactly_once
    )
    report(ledgers, result, bounds, args.out)
    return 0 if result.passed and within else 1


def unit_fuzz(examples: int) -> int:
    """Run the unit fuzz tests; the inputs they decoded (0 when they failed)."""
    say(f"unit fuzzing: {examples} events and {examples} requests, Python codec and Java parser")
    env = {**os.environ, "STREAMREC_FUZZ_EXAMPLES": str(examples)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *UNIT_FUZZ_TESTS],
        cwd=REPO_ROOT, env=env, check=False,
    )  # fmt: skip
    return 2 * examples if done.returncode == 0 else 0


def report(ledgers: Sequence[Ledger], result: Totals, bounds: dict[str, float], out: Path) -> None:
    rows = [
        [ledger.name, fault.name, str(fault.asked), str(fault.degraded), ms(fault.p99_ms),
         ms(fault.recovered_ms)]
        for ledger in ledgers
        for fault in ledger.fault_reports()
        if not fault.name.startswith("worker")
    ]  # fmt: skip
    print_table(["pass", "fault", "asked during", "degraded", "p99 ms", "normal again ms"], rows)
    print()
    header = [
        "pass",
        "requests",
        "lost",
        "duplicated",
        "bound",
        "restarts",
        "crashed",
        "poison",
        "dlq missing",
        "valid requests in dlq",
        "late events",
        "store losses",
    ]
    print_table(header, [pass_row(ledger, bounds[ledger.name]) for ledger in ledgers])
    for ledger in ledgers:
        for crash in ledger.crashed:
            print(f"\n{ledger.name}: crashed {crash}")
        for reason, count in ledger.unexpected_dead_letters.most_common(5):
            print(f"{ledger.name}: {count} valid records dead-lettered: {reason}")
        for loss in ledger.store_losses[:10]:
            print(f"{ledger.name}: lost from the store after a restart: {loss}")
    save_bar_plot(
        out / "chaos.png",
        "chaos: requests, lost and duplicated per pass",
        [ledger.name for ledger in ledgers],
        {
            "requests": [float(len(ledger.sent)) for ledger in ledgers],
            "lost": [float(ledger.lost) for ledger in ledgers],
            "duplicated": [float(ledger.duplicated) for ledger in ledgers],
        },
    )
    print(f"plot: {out / 'chaos.png'}")
    print("PASS" if result.passed else "FAIL: a goal was missed (see the tables)")
    print(result_line(**result.result()))


def ms(value: float) -> str:
    return "none" if math.isinf(value) else f"{value:.0f}"


def pass_row(ledger: Ledger, bound: float) -> list[str]:
    counts = [len(ledger.sent), ledger.lost, ledger.duplicated, round(bound), ledger.restarts,
              len(ledger.crashed), ledger.poison_sent.total(), ledger.dead_letters_missing,
              ledger.unexpected_dead_letters.total(), ledger.late_events,
              len(ledger.store_losses)]  # fmt: skip
    return [ledger.name, *map(str, counts)]
