"""The soak's growth verdict: slopes after warm-up, restarts start a series afresh."""

from __future__ import annotations

import math

from tests.chaos.growth import growth_per_min, settled, slope_per_min


def test_a_flat_series_after_warm_up_has_no_growth() -> None:
    warming = [(m / 2, 100.0 + 20 * m, 7) for m in range(6)]  # grows while warming up
    flat = [(3 + m / 2, 160.0, 7) for m in range(20)]
    assert growth_per_min(warming + flat, warmup_min=3) == 0


def test_a_leak_shows_as_its_rate() -> None:
    leak = [(m / 2, 200.0 + 1.5 * (m / 2), 7) for m in range(40)]
    assert math.isclose(growth_per_min(leak, warmup_min=5), 1.5)


def test_a_restart_starts_the_series_afresh_without_its_first_sample() -> None:
    before = [(m, 500.0, 1) for m in range(10)]
    after = [(10.0, 50.0, 2), (11.0, 120.0, 2), (12.0, 121.0, 2), (13.0, 122.0, 2)]
    assert [s[0] for s in settled(before + after, warmup_min=0)] == [11.0, 12.0, 13.0]
    assert growth_per_min(before + after, warmup_min=0) == 1.0  # not the drop at the kill


def test_a_restarted_process_warms_up_again() -> None:
    before = [(m, 500.0, 1) for m in range(10)]
    climbing = [(10.0 + m, 50.0 + 300 * m, 2) for m in range(4)]  # a heap filling up
    flat = [(14.0 + m, 950.0, 2) for m in range(6)]
    assert settled(before + climbing + flat, warmup_min=4)[0][0] == 14.0
    assert growth_per_min(before + climbing + flat, warmup_min=4) == 0


def test_too_few_samples_give_no_verdict() -> None:
    assert math.isnan(slope_per_min([(0.0, 1.0, 0), (1.0, 2.0, 0)]))
    assert math.isnan(growth_per_min([], warmup_min=0))


def test_a_restart_may_warm_up_for_less_than_the_run() -> None:
    before = [(m, 500.0, 1) for m in range(10)]
    after = [(10.0 + m, 900.0, 2) for m in range(10)]
    assert settled(before + after, warmup_min=8, restart_warmup_min=2)[0][0] == 12.0
