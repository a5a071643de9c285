"""``make repeat-checks``: each guarantee check N times on a fresh stack, and its pass rate.

A check shown passing once says little on a shared 2-core box: this runs every
check of ``--checks`` ``--runs`` times (``make repeat-checks N=5 CHECKS="..."``),
each as ``make RECORD=1 <check>``, so that every run's RESULT line, or its absence,
lands in the results file (:mod:`tests.results`, ``docs/results.jsonl``). Before
each run the local stack of ``STREAMREC_STACK_HOME`` is stopped
(``python -m jobs.localstack down``): checks that use it start it afresh, and the
checks with stacks of their own (canary-check, chaos, security-check, bench-sla)
start a new one on free ports per run anyway. Each run's output goes to
``--logs/<check>-<n>.log``.

A run passes when its target exits 0. The table gives, per check, the runs, the
passes and the exit codes of the failures; the last line is
``RESULT runs=… passed=… <check>=<passed>/<runs> …`` (``-`` in names becomes ``_``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.report import print_table, result_line
from tests.results import ROOT, last_result_line

# The checks `make repeat-checks` runs by default; the long ones (chaos with its default
# schedule, a 10-minute soak) are `make repeat-checks-long`.
SHORT_CHECKS = ("canary-check", "security-check", "drift-check", "bench-sla", "demo")
LONG_CHECKS = ("chaos", "soak")


@dataclass(frozen=True)
class Run:
    check: str
    number: int
    exit_code: int
    seconds: float
    result: str | None  # the RESULT line, None when the run printed none

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def summary_rows(runs: Sequence[Run]) -> list[list[str]]:
    """One row per check, in first-run order: runs, passed, rate, failures' exit codes (pure)."""
    checks = list(dict.fromkeys(r.check for r in runs))
    rows = []
    for check in checks:
        mine = [r for r in runs if r.check == check]
        passed = sum(r.passed for r in mine)
        failed = ",".join(f"#{r.number}:{r.exit_code}" for r in mine if not r.passed) or "-"
        minutes = sum(r.seconds for r in mine) / len(mine) / 60
        rows.append([check, str(len(mine)), str(passed), f"{passed / len(mine):.0%}", failed,
                     f"{minutes:.1f}"])  # fmt: skip
    return rows


def verdict(runs: Sequence[Run]) -> str:
    """The RESULT line over every run (pure)."""
    per_check = {row[0].replace("-", "_"): f"{row[2]}/{row[1]}" for row in summary_rows(runs)}
    return result_line(runs=len(runs), passed=sum(r.passed for r in runs), **per_check)


def run_once(check: str, number: int, logs: Path, env: dict[str, str]) -> Run:
    """``make RECORD=1 <check>`` after stopping the local stack; its output to a log."""
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "-m", "jobs.localstack", "down"], cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    log = logs / f"{check}-{number}.log"
    print(f"[repeat-checks {time.strftime('%H:%M:%S')}] {check} run {number} -> {log}", flush=True)
    began = time.monotonic()
    with log.open("w") as out:
        command = [os.environ.get("MAKE", "make"), "RECORD=1", check]
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                              check=False)  # fmt: skip
    code = done.returncode
    line = last_result_line(log.read_text(errors="replace").splitlines())
    run = Run(check, number, code, time.monotonic() - began, line)
    print(f"  exit {code} in {run.seconds / 60:.1f} min: {line or 'no RESULT line'}", flush=True)
    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.repeat_checks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each check")
    parser.add_argument("--checks", default=" ".join(SHORT_CHECKS),
                        help="make targets, space- or comma-separated")  # fmt: skip
    parser.add_argument("--soak-minutes", default="10", help="MINUTES of each soak run")
    parser.add_argument("--logs", type=Path, default=ROOT / "reports" / "repeat-checks")
    args = parser.parse_args(argv)
    checks = [c for c in args.checks.replace(",", " ").split() if c]
    if args.runs < 1 or not checks:
        parser.error("give --runs >= 1 and at least one check")
    args.logs.mkdir(parents=True, exist_ok=True)
    # MINUTES is read by the soak target only; RECORD by the sub-make itself.
    env = {**os.environ, "MINUTES": args.soak_minutes}
    env.pop("MAKEFLAGS", None)  # the sub-make's own flags, not the caller's -j or -n
    runs = [run_once(check, n, args.logs, env) for check in checks
            for n in range(1, args.runs + 1)]  # fmt: skip
    print_table(["check", "runs", "passed", "rate", "failed (#run:exit)", "min/run"],
                summary_rows(runs))  # fmt: skip
    print(verdict(runs))
    return 0 if all(r.passed for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
