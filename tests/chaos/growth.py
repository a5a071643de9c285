"""How fast a sampled quantity grows once warmed up (pure): the soak's verdict.

A series is a list of samples ``(minute, value, pid)``. A restart (the pid
changes) starts the process's memory afresh, so only the samples since the last
restart count, less the first after it (a process still loading), and only
those after the warm-up. The growth is the least-squares slope in units/minute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Sample = tuple[float, float, int]  # minute, value, pid (0 for what has none)


def settled(samples: Sequence[Sample], warmup_min: float) -> list[Sample]:
    """The samples after the warm-up and after the last restart's first sample."""
    if not samples:
        return []
    last_pid = samples[-1][2]
    since = len(samples) - 1
    while since > 0 and samples[since - 1][2] == last_pid:
        since -= 1
    restarted = since > 0
    tail = samples[since + 1 :] if restarted else samples[since:]
    return [s for s in tail if s[0] >= warmup_min]


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


def growth_per_min(samples: Sequence[Sample], warmup_min: float) -> float:
    return slope_per_min(settled(samples, warmup_min))
