"""Write ``docs/benchmarks.md`` from the figures kept as data.

``python -m tests.docs.benchmarks > docs/benchmarks.md`` (``make docs``). The runs are
``docs/results.jsonl`` (one JSON object a run, appended by ``make RECORD=1 <target>``,
see ``tests/results.py``; entries carried over from earlier prose say so in ``source``).
What each benchmark measures, its goals and the levers tried for it are
``docs/benchmarks.toml``. The page gives, per benchmark, the latest run's figures and
which goals it met, the runs behind it, newest first, and the levers as a table.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.results import DEFAULT_FILE, read_entries

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NOTES = ROOT / "docs" / "benchmarks.toml"
RUNS_SHOWN = 5


def group_key(entry: Mapping[str, Any]) -> tuple[str, str]:
    """Runs of one benchmark with the same arguments are one series."""
    return str(entry["name"]), str(entry.get("args") or "")


def series(entries: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Each series' runs, newest first (by ``started_at``, then file order)."""
    found: dict[tuple[str, str], list[tuple[int, Mapping[str, Any]]]] = {}
    for position, entry in enumerate(entries):
        found.setdefault(group_key(entry), []).append((position, entry))
    return {
        key: [
            e for _, e in sorted(runs, key=lambda r: (str(r[1]["started_at"]), r[0]), reverse=True)
        ]
        for key, runs in found.items()
    }


def judge(check: str, result: Mapping[str, Any] | None) -> bool | None:
    """Whether a goal's expression holds over a run's RESULT values; None if it cannot say."""
    if not result:
        return None
    try:
        # The expressions are the repository's own notes (docs/benchmarks.toml), not input.
        verdict = eval(check, {"__builtins__": {}}, dict(result))
    except (NameError, TypeError, ZeroDivisionError):
        return None
    return bool(verdict)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(row) for row in rows)]


def provenance(entry: Mapping[str, Any]) -> str:
    """Where a run came from: its commit, or the prose it was carried from."""
    if entry.get("source"):
        written = entry.get("documented_in")
        measured = f"{entry['commit']}, " if entry.get("commit") else ""
        return f"{measured}carried from prose" + (f" ({written})" if written else "")
    return str(entry.get("commit") or "unknown")


def _load(entry: Mapping[str, Any]) -> str:
    load = entry.get("load_avg") or []
    return _cell(load[0]) if load and load[0] is not None else "—"


def _verdicts(goals: Sequence[Mapping[str, str]], result: Mapping[str, Any] | None) -> list[str]:
    words = {True: "met", False: "**not met**", None: "not judged"}
    return [f"- {goal['text']}: {words[judge(goal['check'], result)]}" for goal in goals]


def section(
    name: str, args: str, notes: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
) -> list[str]:
    target = f"make {name}" + (f" {args}" if args else "")
    title = notes.get("title", name)
    lines = [f"## {title}: `{target}`", "", str(notes.get("measures", "")).strip(), ""]
    figures = list(notes.get("figures", []))
    if not runs:
        return [*lines, "No run recorded yet.", ""]
    latest = runs[0]
    result = latest.get("result") or {}
    shown = ", ".join(f"`{key}={_cell(result.get(key))}`" for key in figures if key in result)
    lines += [
        f"**Latest** ({latest['started_at']}, {provenance(latest)}): {shown or 'no RESULT line'}.",
        "",
    ]
    if latest.get("note"):
        lines += [f"{latest['note']}.", ""]
    if notes.get("goals"):
        lines += ["Goals, judged on the latest run:", "", *_verdicts(notes["goals"], result), ""]
    header = ["started", "commit", "load", *figures, "exit"]
    rows = [
        [
            str(run["started_at"]),
            provenance(run),
            _load(run),
            *(_cell((run.get("result") or {}).get(key)) for key in figures),
            _cell(run.get("exit_code")),
        ]
        for run in runs[:RUNS_SHOWN]
    ]
    lines += [f"Runs, newest first ({len(runs)} recorded):", "", *_table(header, rows), ""]
    levers = notes.get("levers", [])
    if levers and not args:
        lines += ["What was tried:", "", *_table(["lever", "measured effect", "kept"], levers), ""]
    return lines


def render(entries: Sequence[Mapping[str, Any]], notes: Mapping[str, Any]) -> str:
    grouped = series(entries)
    order = [key for name in notes for key in sorted(grouped) if key[0] == name]
    order += [key for key in sorted(grouped) if key not in order]
    order += [(name, "") for name in notes if (name, "") not in grouped and name not in
              {key[0] for key in grouped}]  # fmt: skip
    summary = []
    for name, args in order:
        runs = grouped.get((name, args), [])
        goals = notes.get(name, {}).get("goals", [])
        result = runs[0].get("result") if runs else None
        met = sum(judge(goal["check"], result) is True for goal in goals)
        target = f"`make {name}{' ' + args if args else ''}`"
        when = str(runs[0]["started_at"]) if runs else "—"
        summary.append([target, when, f"{met} of {len(goals)}" if goals else "—", str(len(runs))])
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by `make docs` (python -m tests.docs.benchmarks) from docs/results.jsonl",
        "and docs/benchmarks.toml; edit those, not this page. -->",
        "",
        "Every benchmark and guarantee check ends with one `RESULT key=value ...` line.",
        "`make RECORD=1 <target>` appends it, with the start time, commit, core count and",
        "load average, to `docs/results.jsonl`; `make docs` rebuilds this page from it. The",
        "figures come from a shared 2-core host whose speed moves by up to 2x between",
        "hours: compare runs side by side (each benchmark measures its sides in alternating",
        "rounds), not across days. Runs marked *carried from prose* were measured before",
        "the results file existed and copied from the benchmark notes of the time (the",
        "commit in brackets is the one that wrote them down).",
        "",
        *_table(["benchmark", "latest run", "goals met", "runs"], summary),
        "",
    ]
    for name, args in order:
        lines += section(name, args, notes.get(name, {}), grouped.get((name, args), []))
    return "\n".join(lines).rstrip("\n") + "\n"


def page(results: Path = DEFAULT_FILE, notes: Path = DEFAULT_NOTES) -> str:
    return render(read_entries(results), tomllib.loads(notes.read_text()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.docs.benchmarks", description=__doc__)
    parser.add_argument("--results", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--notes", type=Path, default=DEFAULT_NOTES)
    args = parser.parse_args(argv)
    sys.stdout.write(page(args.results, args.notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
