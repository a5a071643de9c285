"""The feature benchmark's arithmetic (the runs themselves are ``make bench-features``)."""

from __future__ import annotations

from statistics import median

import pytest

from tests.benchmarks.features import Runs, run_order, warm_rate


def test_the_warm_rate_counts_the_events_after_the_first_quarter() -> None:
    # Eight rows: the first two (a quarter) are the warm-up, slow; then one row per 10 ms.
    stamps = [0, 1000, 2000, 2010, 2020, 2030, 2040, 2050]
    # Five events after the row at 2000 ms, over 50 ms.
    assert warm_rate(stamps) == pytest.approx(100.0)
    assert warm_rate(list(reversed(stamps))) == pytest.approx(100.0)


def test_too_few_rows_give_no_warm_rate() -> None:
    assert warm_rate([]) is None
    assert warm_rate([5]) is None
    assert warm_rate([7, 7, 7, 7]) is None


def test_the_deployed_job_runs_once_per_round_and_the_others_in_the_first() -> None:
    labels = ["deployed", "every", "sql"]
    assert run_order(labels, {"deployed": 3}) == ["deployed", "every", "sql", "deployed",
                                                  "deployed"]  # fmt: skip
    assert run_order(labels, {}) == labels


def test_the_rate_of_repeated_runs_is_their_median() -> None:
    assert median([41_004, 58_441, 55_000]) == 55_000
    assert median([1.0, 3.0]) == 2.0
    runs = Runs({"a": [3.0, 1.0, 2.0]}, {"a": [None, 5.0, 7.0]}, {}, 10)
    assert runs.rate("a") == 2.0
    assert runs.warm_rate("a") == 6.0, "runs without a warm rate are left out"
