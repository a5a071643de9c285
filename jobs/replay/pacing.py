"""Pacing a replay by the events' own timestamps (pure apart from the injected clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Sleeping for less than this costs more in wake-up jitter than it gains in accuracy.
MIN_SLEEP_S = 0.002


@dataclass
class Pacer:
    """Holds each event back until ``(ts - first_ts) / speed`` seconds have passed.

    ``speed`` is the replay rate relative to event time: 1 is real time, 60 plays an
    hour in a minute, 0 (or less) means as fast as possible. Events that go back in
    time are sent at once.
    """

    speed: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _anchor: tuple[float, int] | None = field(default=None, init=False)

    @property
    def unpaced(self) -> bool:
        return self.speed <= 0

    def delay_for(self, ts_ms: int) -> float:
        """Seconds to wait before sending an event stamped ``ts_ms`` (anchors on the first)."""
        if self.unpaced:
            return 0.0
        if self._anchor is None:
            self._anchor = (self.clock(), ts_ms)
            return 0.0
        wall0, ts0 = self._anchor
        due = wall0 + (ts_ms - ts0) / 1000.0 / self.speed
        return max(0.0, due - self.clock())

    def wait_for(self, ts_ms: int) -> float:
        delay = self.delay_for(ts_ms)
        if delay >= MIN_SLEEP_S:
            self.sleep(delay)
        return delay
