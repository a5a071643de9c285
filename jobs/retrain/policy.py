"""When sustained drift starts a retraining run (pure: alerts and a clock in, a decision out).

* **Sustained**: ``consecutive`` judged checks in a row with status ``drift``. A check
  that finds no drift resets the count; ``insufficient_data`` neither counts nor
  resets (a quiet window says nothing either way).
* **One run at a time**: while a run is in progress, further drift is noted, not acted on.
* **A minimum interval** between the starts of two runs, whatever their outcome.

After a start the count begins again from zero: the next run needs a new streak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from schemas.records import DriftAlert

Action = Literal["wait", "start", "hold"]


@dataclass(frozen=True)
class RetrainPolicy:
    consecutive: int = 3
    min_interval_s: float = 3600.0


@dataclass(frozen=True)
class Decision:
    action: Action  # wait: not sustained yet; start: retrain now; hold: sustained, but guarded
    reason: str
    checks: tuple[str, ...] = ()  # the check ids of the streak that started a run


@dataclass
class Trigger:
    policy: RetrainPolicy
    running: bool = False
    last_start_s: float | None = None
    streak: list[str] = field(default_factory=list)

    def observe(self, alert: DriftAlert, now_s: float) -> Decision:
        if alert.status == "insufficient_data":
            return Decision("wait", f"{alert.check_id}: insufficient data (streak kept)")
        if alert.status != "drift":
            self.streak.clear()
            return Decision("wait", f"{alert.check_id}: no drift (streak reset)")
        self.streak.append(alert.check_id)
        need = self.policy.consecutive
        if len(self.streak) < need:
            return Decision("wait", f"{alert.check_id}: drift, {len(self.streak)} of {need}")
        if self.running:
            return Decision("hold", "sustained drift, but a retraining run is in progress")
        if self.last_start_s is not None:
            since = now_s - self.last_start_s
            if since < self.policy.min_interval_s:
                return Decision(
                    "hold",
                    f"sustained drift, but the last run started {since:.0f} s ago "
                    f"(minimum {self.policy.min_interval_s:.0f} s)",
                )
        checks = tuple(self.streak)
        self.streak.clear()
        self.running, self.last_start_s = True, now_s
        return Decision("start", f"{len(checks)} drifted checks in a row", checks)

    def finished(self) -> None:
        self.running = False
