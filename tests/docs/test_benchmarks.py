"""docs/benchmarks.md is generated from docs/results.jsonl and docs/benchmarks.toml."""

from __future__ import annotations

import json
from pathlib import Path

from tests.docs import benchmarks
from tests.results import DEFAULT_FILE, read_entries

NOTES = {
    "bench-x": {
        "title": "X",
        "measures": "what X measures",
        "figures": ["rps"],
        "goals": [{"text": "rps >= 100", "check": "rps >= 100"}],
        "levers": [["a lever", "+10%", "kept"]],
    }
}


def run(started_at: str, rps: float, **extra: object) -> dict[str, object]:
    entry = {
        "name": "bench-x", "started_at": started_at, "seconds": 1.0, "exit_code": 0,
        "commit": "abc1234", "cores": 2, "load_avg": [0.5, 0.4, 0.3],
        "result": {"rps": rps}, "raw": f"RESULT rps={rps}",
    }  # fmt: skip
    entry.update(extra)
    return entry


def test_the_committed_page_is_current() -> None:
    assert (benchmarks.ROOT / "docs" / "benchmarks.md").read_text() == benchmarks.page(), (
        "docs/benchmarks.md is stale: run `make docs`"
    )


def test_every_carried_entry_says_so_and_parses() -> None:
    entries = read_entries(DEFAULT_FILE)
    assert entries, "docs/results.jsonl holds the figures"
    for entry in entries:
        assert {"name", "started_at", "exit_code", "commit", "cores", "result", "raw"} <= set(entry)
        if entry.get("source"):
            assert entry["source"] == "carried from prose" and entry["prose"]


def test_the_latest_run_leads_and_its_goals_are_judged() -> None:
    entries = [run("2026-12-02T10:00:00+00:00", 150.0), run("2026-12-01T10:00:00+00:00", 90.0)]
    page = benchmarks.render(list(reversed(entries)), NOTES)
    section = page.split("## X: `make bench-x`", 1)[1]
    assert "**Latest** (2026-12-02T10:00:00+00:00, abc1234): `rps=150`" in section
    assert "- rps >= 100: met" in section
    assert section.index("| 2026-12-02") < section.index("| 2026-12-01")
    assert "| a lever | +10% | kept |" in section
    assert "| `make bench-x` | 2026-12-02T10:00:00+00:00 | 1 of 1 | 2 |" in page


def test_a_missed_goal_a_carried_run_and_a_run_without_result() -> None:
    carried = run(
        "2026-12-03", 50.0, commit=None, source="carried from prose", documented_in="def5678"
    )
    failed = run("2026-12-01", 0.0, exit_code=1, result=None, raw=None)
    page = benchmarks.render([failed, carried], NOTES)
    assert "carried from prose (def5678)" in page
    assert "- rps >= 100: **not met**" in page
    assert "| 2026-12-01 | abc1234 | 0.5 | — | 1 |" in page


def test_runs_with_arguments_are_their_own_series(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    lines = [run("2026-12-01", 120.0), run("2026-12-02", 80.0, args="DATASET=other")]
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    notes = tmp_path / "notes.toml"
    notes.write_text('[bench-x]\ntitle = "X"\nfigures = ["rps"]\n')
    page = benchmarks.page(results, notes)
    assert "## X: `make bench-x`" in page and "## X: `make bench-x DATASET=other`" in page


def test_a_goal_that_cannot_be_judged_says_so() -> None:
    assert benchmarks.judge("missing > 1", {"rps": 1}) is None
    assert benchmarks.judge("rps > 1", None) is None
