from __future__ import annotations

import pytest

from jobs.drift.window import Window, WindowPolicy


def test_window_closes_on_rows_or_time_whichever_first() -> None:
    window = Window(WindowPolicy(max_rows=3, max_seconds=10.0), opened_at=100.0)
    for ts in (5, 1, 9):
        assert not window.due(101.0)
        window.add({"x": ts}, ts)
    assert window.due(101.0)
    assert (window.rows_seen, window.first_ts, window.last_ts) == (3, 1, 9)
    timed = Window(WindowPolicy(max_rows=0, max_seconds=10.0), opened_at=100.0)
    assert not timed.due(109.9) and timed.due(110.0)


def test_sample_is_bounded_and_uniform() -> None:
    window = Window(WindowPolicy(max_rows=0, max_seconds=60, sample_rows=1000), opened_at=0.0)
    for value in range(100_000):
        window.add({"x": value}, value)
    assert window.rows_seen == 100_000 and len(window.sample) == 1000
    mean = sum(row["x"] for row in window.sample) / 1000
    assert 45_000 < mean < 55_000  # a reservoir keeps early and late rows alike


def test_a_window_needs_a_limit() -> None:
    with pytest.raises(ValueError, match="both are 0"):
        WindowPolicy(max_rows=0, max_seconds=0)
