"""The feature benchmark's arithmetic (the runs themselves are ``make bench-features``)."""

from __future__ import annotations

import pytest

from tests.benchmarks.features import warm_rate


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
