"""The pass-rate table and RESULT line of make repeat-checks (pure, no services)."""

from __future__ import annotations

from tests.repeat_checks import Run, summary_rows, verdict
from tests.results import parse_result


def test_every_run_counts_and_failures_name_their_run_and_exit_code() -> None:
    runs = [Run("canary-check", n, 0, 300.0, "RESULT x=1") for n in (1, 2, 3)]
    runs += [Run("bench-sla", 1, 0, 600.0, "RESULT y=1"), Run("bench-sla", 2, 1, 60.0, None)]
    rows = summary_rows(runs)
    assert rows[0] == ["canary-check", "3", "3", "100%", "-", "5.0"]
    assert rows[1][:5] == ["bench-sla", "2", "1", "50%", "#2:1"]
    result = parse_result(verdict(runs))
    assert result == {"runs": 5, "passed": 4, "canary_check": "3/3", "bench_sla": "1/2"}
