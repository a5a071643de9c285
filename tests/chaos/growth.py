"""How fast a sampled quantity grows once warmed up (pure): the soak's verdict.

A series is a list of samples ``(minute, value, pid)``. A restart (the pid
changes) starts the process's memory afresh, so only the samples since the last
restart count, and a restarted process warms up again: its first ``warmup_min``
minutes are left out as the run's first are. The growth is the least-squares
slope in units/minute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Sample = tuple[float, float, int]  # minute, value, pid (0 for what has none)


def settled(
    samples: Sequence[Sample], warmup_min: float, restart_warmup_min: float | None = None
) -> list[Sample]:
    """The samples after the warm-up of the run, or of the last restart.

    The run's warm-up covers state filling up to its horizons; a restarted process only
    refills its own memory, so its warm-up (``restart_warmup_min``, by default the
    same) may be shorter.
    """
    if not samples:
        return []
    last_pid = samples[-1][2]
    since = len(samples) - 1
    while since > 0 and samples[since - 1][2] == last_pid:
        since -= 1
    if since == 0:
        return [s for s in samples if s[0] >= warmup_min]
    restart = samples[since][0]
    # The restart's first sample may be a process still loading, whatever the warm-up.
    again = warmup_min if restart_warmup_min is None else restart_warmup_min
    return [s for s in samples[since + 1 :] if s[0] >= restart + again]


def slope_per_min(samples: Sequence[Sample]) -> float:
    """Least-squares slope of value over minutes; NaN with fewer than three samples."""
    if len(samples) < 3:
        return math.nan
    xs = [s[0] for s in samples]
    ys = [s[1] for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    if spread == 0:
        return math.nan
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def growth_per_min(
    samples: Sequence[Sample], warmup_min: float, restart_warmup_min: float | None = None
) -> float:
    return slope_per_min(settled(samples, warmup_min, restart_warmup_min))
