"""Deriving recommendation requests from the replayed stream (pure, seeded)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from schemas.records import BehaviorEvent, RecRequest


@dataclass
class TriggerSampler:
    """After each event, with probability ``rate``, ask for recommendations for its user.

    The request carries the event's time and the event itself as its
    ``trigger``, so the worker can make sure the answer's features include that
    event (read-your-writes). Seeded: the same file and seed give the same requests.
    """

    rate: float
    k: int = 20
    seed: int = 7
    id_prefix: str = "replay"
    _rng: random.Random = field(init=False, repr=False)
    _issued: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"request rate must be within [0, 1], got {self.rate}")
        self._rng = random.Random(self.seed)

    def after(self, event: BehaviorEvent) -> RecRequest | None:
        if self.rate == 0.0 or self._rng.random() >= self.rate:
            return None
        self._issued += 1
        return RecRequest(
            request_id=f"{self.id_prefix}-{self._issued}",
            user_id=event.user_id,
            ts=event.ts,
            k=self.k,
            trigger=event,
        )
