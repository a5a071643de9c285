"""The current window: closes by row count or by time, keeps a bounded uniform sample.

The changelog can run at hundreds of thousands of rows a second while one
Evidently run over tens of thousands of rows takes seconds. So a window
counts every row but keeps at most ``sample_rows`` of them, a uniform
reservoir sample (algorithm R): each check costs the same whatever the rate,
and the job keeps up by judging a sample rather than falling behind.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from jobs.drift.columns import DriftRow


@dataclass(frozen=True)
class WindowPolicy:
    """``max_rows`` and ``max_seconds`` close a window, whichever comes first (0 = off)."""

    max_rows: int = 0
    max_seconds: float = 300.0
    sample_rows: int = 20_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_rows <= 0 and self.max_seconds <= 0:
            raise ValueError("a window needs a row limit or a time limit (both are 0)")
        if self.sample_rows < 1:
            raise ValueError("sample_rows must be at least 1")


@dataclass
class Window:
    """Rows gathered since ``opened_at`` (monotonic seconds)."""

    policy: WindowPolicy
    opened_at: float
    rows_seen: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    sample: list[DriftRow] = field(default_factory=list)
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.policy.seed + int(self.opened_at * 1000))

    def add(self, row: DriftRow, event_ts: int) -> None:
        self.rows_seen += 1
        self.first_ts = event_ts if self.first_ts is None else min(self.first_ts, event_ts)
        self.last_ts = event_ts if self.last_ts is None else max(self.last_ts, event_ts)
        if len(self.sample) < self.policy.sample_rows:
            self.sample.append(row)
            return
        slot = self._random.randrange(self.rows_seen)
        if slot < self.policy.sample_rows:
            self.sample[slot] = row

    def due(self, now: float) -> bool:
        """True once the row limit is reached or the time limit has passed."""
        policy = self.policy
        if policy.max_rows > 0 and self.rows_seen >= policy.max_rows:
            return True
        return policy.max_seconds > 0 and now - self.opened_at >= policy.max_seconds
