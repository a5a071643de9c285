"""The benchmarks' counting: failures push figures down, never out of them."""

from __future__ import annotations

import math

import pytest

from tests.benchmarks.gpu_serving import served_figures
from tests.benchmarks.report import (
    BenchmarkFailure,
    failure_percentile,
    failure_rate,
    first_differences,
    percentile,
    require_checks,
    require_same_rows,
    result_line,
)


def test_percentile_is_nearest_rank_and_nan_without_samples() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0], 100) == 3.0
    assert math.isnan(percentile([], 50))


def test_failures_push_the_tail_to_infinity() -> None:
    good = [10.0] * 98
    # Dropping the two failures would report a 10 ms p99: the flattering figure.
    assert percentile(good, 99) == 10.0
    assert failure_percentile(good, 2, 99) == math.inf
    assert failure_percentile(good, 2, 50) == 10.0
    assert failure_percentile(good, 0, 99) == 10.0


def test_only_failures_is_an_infinite_percentile() -> None:
    assert failure_percentile([], 3, 50) == math.inf


def test_failure_rate_counts_nothing_attempted_as_failed() -> None:
    assert failure_rate(200, 3) == 0.015
    assert failure_rate(200, 0) == 0.0
    assert failure_rate(0, 0) == 1.0


def test_same_rows_in_another_order_pass() -> None:
    require_same_rows(("a", "b"), [b"x", b"y", b"y"], [b"y", b"x", b"y"])


def test_different_rows_fail_and_show_the_first_difference() -> None:
    with pytest.raises(BenchmarkFailure) as raised:
        require_same_rows(("sql", "datastream"), [b"u1,3", b"u2,5"], [b"u1,3", b"u2,6"])
    message = str(raised.value)
    assert "sql (2 rows) and datastream (2 rows) differ" in message
    assert "[1] sql: b'u2,5'" in message
    assert "[1] datastream: b'u2,6'" in message


def test_a_missing_row_fails() -> None:
    with pytest.raises(BenchmarkFailure, match=r"\(3 rows\).*\(2 rows\)"):
        require_same_rows(("a", "b"), [b"1", b"2", b"2"], [b"1", b"2"])
    assert first_differences([b"1", b"2", b"2"], [b"1", b"2"]) == [(2, b"2", None)]


def test_first_differences_stop_at_the_limit() -> None:
    left = [bytes([n]) for n in range(10)]
    right = [bytes([n + 100]) for n in range(10)]
    assert [i for i, _, _ in first_differences(left, right, limit=3)] == [0, 1, 2]
    assert first_differences(left, list(reversed(left))) == []


def test_no_check_is_a_failure_not_zero_alarms() -> None:
    require_checks({"unshifted": 9, "shifted": 10})
    with pytest.raises(BenchmarkFailure, match="no judged check ran in the shifted run"):
        require_checks({"unshifted": 9, "shifted": 0}, what="judged check")
    with pytest.raises(BenchmarkFailure, match="unshifted and shifted run"):
        require_checks({"unshifted": 0, "shifted": 0})


def test_result_line_rounds_numbers_keeps_strings_and_shows_infinity() -> None:
    line = result_line(rps=839.6, error_rate="0.0125", p99_ms=math.inf, checks=10)
    assert line == "RESULT rps=840 error_rate=0.0125 p99_ms=inf checks=10"


def test_served_rate_divides_by_the_measured_time_not_the_configured_one() -> None:
    # Two clients configured for 6 s: the last request ends 7 s after the first began.
    outcomes = [([0.010] * 300, 0, 100.0, 106.5), ([0.020] * 400, 0, 100.2, 107.0)]
    figures = served_figures(outcomes, cands_per_request=200)
    assert figures["elapsed_s"] == pytest.approx(7.0)
    assert figures["cands_per_s"] == pytest.approx(700 * 200 / 7.0)
    assert figures["cands_per_s"] < 700 * 200 / 6.0  # what dividing by --seconds claimed


def test_served_errors_count_against_the_tail() -> None:
    outcomes = [([0.010] * 90, 10, 0.0, 6.0)]
    figures = served_figures(outcomes, cands_per_request=1)
    assert figures["requests"] == 90
    assert figures["errors"] == 10
    assert figures["p99_ms"] == math.inf
    assert figures["p50_ms"] == pytest.approx(10.0)
