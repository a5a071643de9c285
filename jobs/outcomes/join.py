"""Recommendations joined with their users' later events, per variant (pure).

A recommendation is a **hit** when the same user views, carts, favours or buys one
of its items within ``horizon_ms`` after it was produced, and a **miss** when the
horizon passes without one. Time is event time: the join's clock is the newest
event time seen, and a recommendation is called a miss once the clock is past its
horizon plus ``lateness_ms``; a quiet stream calls nothing. A recommendation counts
once, at its first hit.

The two topics are read by one consumer, so either may run ahead (a backlog, a
restart). Events are therefore also kept for ``horizon_ms + lateness_ms`` per user: a
recommendation that arrives after the events that answer it is matched against them
on arrival. A recommendation arriving more than ``lateness_ms`` behind the events
may miss hits whose events were already let go.

Memory is bounded by the horizon: a user's open recommendations are dropped as they
are finalised, and at most ``max_open_per_user`` stay open per user (the oldest are
finalised early as misses, counted apart as ``evicted``); at most
``max_events_per_user`` recent events are kept per user.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from schemas.records import BehaviorEvent, Recommendation

NO_VARIANT = "default"


@dataclass(frozen=True)
class Verdict:
    variant: str
    registry_version: str
    hit: bool
    behavior: str = ""  # what the hit was (pv, cart, fav, buy); "" for a miss


@dataclass(eq=False)  # compared by identity: a user's queue removes this very one
class _Open:
    produced_at: int
    variant: str
    registry_version: str
    items: frozenset[int]
    user: int
    done: bool = False


@dataclass
class OutcomeJoin:
    horizon_ms: int = 30 * 60_000
    lateness_ms: int = 60_000
    max_open_per_user: int = 50
    max_events_per_user: int = 200
    evicted: Counter[str] = field(default_factory=Counter)
    _events: dict[int, deque[BehaviorEvent]] = field(default_factory=dict)
    _events_in_order: deque[BehaviorEvent] = field(default_factory=deque)
    _by_user: dict[int, deque[_Open]] = field(default_factory=dict)
    # Every open recommendation in arrival order: answers arrive about in produced order,
    # so misses are found at the front without walking every user.
    _in_order: deque[_Open] = field(default_factory=deque)
    _clock: int = 0  # the newest event time seen

    @property
    def open_count(self) -> int:
        return sum(len(q) for q in self._by_user.values())

    def recommended(self, rec: Recommendation) -> list[Verdict]:
        """Open ``rec``; returns the verdicts of recommendations it pushed out (evicted)."""
        if not rec.items:
            return []
        opened = _Open(
            rec.produced_at, rec.variant or NO_VARIANT, rec.registry_version,
            frozenset(i.item_id for i in rec.items), rec.user_id,
        )  # fmt: skip
        for event in self._events.get(rec.user_id, ()):
            if _answers(opened, event, self.horizon_ms):
                return [Verdict(opened.variant, opened.registry_version, True, event.behavior)]
        if opened.produced_at < self._deadline():
            return [Verdict(opened.variant, opened.registry_version, False)]
        queue = self._by_user.setdefault(rec.user_id, deque())
        queue.append(opened)
        self._in_order.append(opened)
        out = []
        while len(queue) > self.max_open_per_user:
            oldest = queue[0]
            self.evicted[oldest.variant] += 1
            out.append(self._close(oldest, None))
        return out

    def event(self, event: BehaviorEvent) -> list[Verdict]:
        """Hits ``event`` makes, then the misses its time closes."""
        self._clock = max(self._clock, event.ts)
        self._keep(event)
        out = []
        for rec in list(self._by_user.get(event.user_id, ())):
            if _answers(rec, event, self.horizon_ms):
                out.append(self._close(rec, event.behavior))
        return out + self.expire()

    def _deadline(self) -> int:
        return self._clock - self.lateness_ms - self.horizon_ms

    def _keep(self, event: BehaviorEvent) -> None:
        recent = self._events.setdefault(event.user_id, deque())
        recent.append(event)
        self._events_in_order.append(event)
        if len(recent) > self.max_events_per_user:
            recent.popleft()
        # Events older than any horizon still open can answer nothing any more.
        while self._events_in_order and self._events_in_order[0].ts < self._deadline():
            old = self._events_in_order.popleft()
            kept = self._events.get(old.user_id)
            if kept and kept[0] is old:
                kept.popleft()
                if not kept:
                    del self._events[old.user_id]

    def expire(self) -> list[Verdict]:
        """Misses of the recommendations whose horizon the join's clock has passed."""
        deadline = self._deadline()
        out = []
        while self._in_order and (
            self._in_order[0].done or self._in_order[0].produced_at < deadline
        ):
            rec = self._in_order.popleft()
            if not rec.done:
                out.append(self._close(rec, None))
        return out

    def _close(self, rec: _Open, behavior: str | None) -> Verdict:
        """Finalise an open recommendation: a hit by ``behavior``, or a miss (None)."""
        rec.done = True
        queue = self._by_user[rec.user]
        queue.remove(rec)
        if not queue:
            del self._by_user[rec.user]
        return Verdict(rec.variant, rec.registry_version, behavior is not None, behavior or "")


def _answers(rec: _Open, event: BehaviorEvent, horizon_ms: int) -> bool:
    return 0 <= event.ts - rec.produced_at <= horizon_ms and event.item_id in rec.items
