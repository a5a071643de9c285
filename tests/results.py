"""Figures kept as data: run a check or benchmark and append its RESULT line to a JSON Lines file.

Every benchmark and guarantee check ends with one line ``RESULT key=value …``.
``python -m tests.results record --name NAME -- COMMAND …`` runs COMMAND with its
output passed through unchanged and appends one JSON object to the results file
(``docs/results.jsonl`` by default, ``STREAMREC_RESULTS_FILE`` or ``--file``):

* ``name``, ``started_at`` (UTC, ISO 8601), ``seconds``, ``exit_code``;
* ``commit`` (``git rev-parse --short HEAD``, ``-dirty`` when the tree has changes),
  ``cores`` and ``load_avg`` (1, 5, 15 minutes) at the start: the box a figure came from;
* ``result``: the RESULT line's pairs (numbers parsed), and ``raw``: the line itself.

A run that prints no RESULT line is recorded too, with ``result`` null: a check that
fails before its verdict is a data point of its pass rate, not a gap. ``make RECORD=1
<target>`` records any target this way; ``make docs`` rebuilds ``docs/benchmarks.md``
from the file (``tests/docs/benchmarks.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT / "docs" / "results.jsonl"
RESULT_PREFIX = "RESULT "


def parse_value(text: str) -> Any:
    """``"12"`` → 12, ``"0.5"`` → 0.5, ``"true"`` → True; anything else stays text (pure)."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def parse_result(line: str) -> dict[str, Any]:
    """The ``key=value`` pairs of a RESULT line (pure); tokens without ``=`` are ignored."""
    body = line.strip().removeprefix(RESULT_PREFIX.strip()).strip()
    pairs = (token.split("=", 1) for token in body.split() if "=" in token)
    return {key: parse_value(value) for key, value in pairs}


def last_result_line(lines: Sequence[str]) -> str | None:
    """The last line that starts with ``RESULT `` (pure)."""
    for line in reversed(lines):
        if line.startswith(RESULT_PREFIX):
            return line.rstrip("\n")
    return None


def commit_label(root: Path = ROOT) -> str:
    """The checkout's short commit, ``-dirty`` when tracked files differ; ``unknown`` off git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def run_passing_through(command: Sequence[str]) -> tuple[int, list[str]]:
    """Run ``command``, its stdout copied to ours line by line (stderr untouched)."""
    lines: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1) as child:
        assert child.stdout is not None
        for line in child.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)
    return child.returncode, lines


def record(
    name: str, started_at: datetime, seconds: float, exit_code: int, line: str | None,
    commit: str, cores: int, load_avg: Sequence[float],
) -> dict[str, Any]:  # fmt: skip
    """One results-file entry (pure)."""
    return {
        "name": name,
        "started_at": started_at.isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "exit_code": exit_code,
        "commit": commit,
        "cores": cores,
        "load_avg": [round(value, 2) for value in load_avg],
        "result": parse_result(line) if line is not None else None,
        "raw": line,
    }


def append(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every entry of a results file, in file order (blank lines skipped)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def results_file(given: Path | None) -> Path:
    if given is not None:
        return given
    configured = os.environ.get("STREAMREC_RESULTS_FILE")
    return Path(configured) if configured else DEFAULT_FILE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.results", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run a command and append its RESULT line")
    rec.add_argument("--name", required=True, help="the check's name, e.g. bench-sla")
    rec.add_argument("--file", type=Path, help=f"results file (default {DEFAULT_FILE})")
    rec.add_argument(
        "--args",
        default="",
        help="the make variables that chose a variant of the check (DATASET=movielens): "
        "recorded beside the name, so the variant's runs are kept apart",
    )
    rec.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        parser.error("give the command to run after --")
    started_at, load_avg = datetime.now(UTC), os.getloadavg()
    started = time.monotonic()
    exit_code, lines = run_passing_through(command)
    entry = record(
        args.name, started_at, time.monotonic() - started, exit_code, last_result_line(lines),
        commit_label(), os.cpu_count() or 0, load_avg,
    )  # fmt: skip
    if args.args.strip():
        entry["args"] = args.args.strip()
    path = results_file(args.file)
    append(path, entry)
    print(f"recorded {args.name} (exit {exit_code}) in {path}", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
