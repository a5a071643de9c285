"""The results recorder: RESULT lines parsed, every run appended (the command really runs)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.results import last_result_line, main, parse_result, read_entries


def test_a_result_line_parses_numbers_flags_and_text() -> None:
    pairs = parse_result("RESULT sla_rps=799.0 runs=5 passed=true verdict=PASS note")
    assert pairs == {"sla_rps": 799.0, "runs": 5, "passed": True, "verdict": "PASS"}


def test_the_last_result_line_counts() -> None:
    lines = ["RESULT a=1\n", "noise\n", "RESULT a=2\n", "tail\n"]
    assert last_result_line(lines) == "RESULT a=2"
    assert last_result_line(["no verdict\n"]) is None


def test_record_appends_one_entry_per_run_failures_included(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    ok = [sys.executable, "-c", "print('hello'); print('RESULT x=1.5 ok=true')"]
    failing = [sys.executable, "-c", "import sys; print('no verdict'); sys.exit(3)"]
    assert main(["record", "--name", "demo", "--file", str(results), "--", *ok]) == 0
    assert main(["record", "--name", "demo", "--file", str(results), "--", *failing]) == 3
    first, second = read_entries(results)
    assert first["result"] == {"x": 1.5, "ok": True} and first["exit_code"] == 0
    assert second["result"] is None and second["exit_code"] == 3
    assert {"commit", "cores", "load_avg", "started_at", "seconds"} <= first.keys()
    assert len(first["load_avg"]) == 3 and first["cores"] >= 1


def test_a_variant_of_a_check_is_recorded_with_the_variables_that_chose_it(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    ok = [sys.executable, "-c", "print('RESULT hit_at_10=0.3')"]
    main(["record", "--name", "eval-online", "--file", str(results), "--args", " ", "--", *ok])
    argv = ["record", "--name", "eval-online", "--file", str(results)]
    main([*argv, "--args", "DATASET=movielens ", "--", *ok])
    default, movielens = read_entries(results)
    assert "args" not in default and movielens["args"] == "DATASET=movielens"
