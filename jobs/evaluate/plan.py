"""Which events train, which are replayed, when each is sent, and which ask for an answer (pure).

The cut is the ranker's own hold-out start (``jobs.ranker.events.holdout_start``):
the model never saw the replayed period, and the replay begins where its
training ended. Times are moved so that the replay's last event lands when the
paced replay will send it: every replayed event is then at or before the wall
clock (consumers refuse events from the future), and the prefix sits as far
before it as it did in the data.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from schemas.records import BehaviorEvent


@dataclass(frozen=True)
class ReplayPlan:
    prefix: list[BehaviorEvent]  # before the cut, in time order
    replay: list[BehaviorEvent]  # at or after the cut, in time order
    cut_ms: int

    @property
    def span_ms(self) -> int:
        return self.replay[-1].ts - self.replay[0].ts if self.replay else 0


def split_at(events: Sequence[BehaviorEvent], cut_ms: int) -> ReplayPlan:
    ordered = sorted(events, key=lambda e: (e.ts, e.user_id))
    prefix = [e for e in ordered if e.ts < cut_ms]
    replay = [e for e in ordered if e.ts >= cut_ms]
    if not prefix or not replay:
        raise ValueError(
            f"a cut at {cut_ms} leaves {len(prefix)} events to train on and {len(replay)} "
            "to replay; both must be non-empty"
        )
    return ReplayPlan(prefix, replay, cut_ms)


def speed_for(span_ms: int, duration_s: float) -> float:
    """Event-time speed-up that replays ``span_ms`` in about ``duration_s`` of wall time."""
    if duration_s <= 0:
        raise ValueError(f"replay duration must be positive, got {duration_s}")
    return max(1.0, span_ms / (duration_s * 1000))


def time_offset(plan: ReplayPlan, speed: float, wall_start_ms: int) -> int:
    """Milliseconds to add to every event so the replay ends when its pacing does."""
    end_wall = wall_start_ms + int(plan.span_ms / speed)
    return end_wall - plan.replay[-1].ts


def shifted(events: Sequence[BehaviorEvent], offset_ms: int) -> list[BehaviorEvent]:
    return [msgspec.structs.replace(e, ts=e.ts + offset_ms) for e in events]


def asking(count: int, rate: float, seed: int) -> list[bool]:
    """Which of ``count`` replayed events are followed by a request (seeded)."""
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"request rate must be within (0, 1], got {rate}")
    rng = random.Random(seed)
    return [rate == 1.0 or rng.random() < rate for _ in range(count)]
