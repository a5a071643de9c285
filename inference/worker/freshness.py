"""Read-your-writes: an answer's features include the click that prompted the request.

A request may carry its ``trigger``, the event that prompted it. That event
reached Kafka before the request did, but the feature path (Flink's fresh view,
the writer, Redis) takes tens to hundreds of milliseconds more, so the store is
often one click behind. The worker therefore

1. reads the users' rows and checks each trigger against them (same item,
   behaviour and event time in the sequence);
2. re-reads the users still behind, every ``POLL_S``, for at most
   ``fresh_wait_ms`` (the wait is the batch's, never unbounded) — a store that
   catches up brings the trigger *and* any earlier click still in flight;
3. folds a trigger the store still lacks into the user's sequence itself
   (``fold_trigger``), or, with folding off, answers without it and flags the
   answer with :data:`TRIGGER_MISSING`.

Waiting only pays while the store is milliseconds behind. When it is seconds
behind (a feature path under load, a writer catching up), every batch would
wait the whole ``fresh_wait_ms`` for nothing: :class:`WaitGate` stops waiting
after ``fresh_wait_give_up`` batches in a row whose wait caught no trigger up,
lets one batch wait again every :data:`PROBE_EVERY_S`, and reopens on the first
wait that catches one up. A new gate knows nothing of the store yet, so it starts
as a probe does: its first wait decides. Had it started open, a worker started
beside a store seconds behind would make its first ``fresh_wait_give_up``
batches wait for nothing; in ``make demo`` that was the first second of
requests, 12-14 ms of features a batch against 2.

Each answer says which of ``store``, ``folded`` or ``missing`` happened in its
``trigger_features`` field; requests without a trigger leave it absent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from inference.worker.features import (
    EXCLUDED_BEHAVIORS,
    Row,
    UserFeatures,
    fold_event,
    row_includes,
)
from schemas.records import RecRequest, TriggerFeatures

TRIGGER_MISSING = "features_behind_trigger"
# Between re-reads of the users still behind: a Redis round trip costs ~0.2 ms,
# the feature path's latency is tens of ms, so a few ms apart loses little.
POLL_S = 0.002

# While the gate is shut, one batch per this long waits again to see if the store caught up.
PROBE_EVERY_S = 1.0

UserReader = Callable[[Sequence[int]], tuple[list[Row | None], list[Row | None]]]


class WaitGate:
    """Whether a batch behind its triggers should wait for the store (see the module doc).

    ``give_up_after`` 0 never shuts: every batch behind waits.
    """

    def __init__(
        self,
        give_up_after: int,
        probe_every_s: float = PROBE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.give_up_after = give_up_after
        self.probe_every_s = probe_every_s
        self._clock = clock
        # One fruitless wait short of shutting: the first wait decides (see the module doc).
        self._fruitless = max(0, give_up_after - 1)
        self._shut_until = 0.0

    @property
    def open(self) -> bool:
        return self._clock() >= self._shut_until

    def record(self, caught_up: int) -> None:
        """After a batch waited: how many of its triggers reached the store meanwhile."""
        if caught_up:
            self._fruitless = 0
            self._shut_until = 0.0
            return
        self._fruitless += 1
        if self.give_up_after and self._fruitless >= self.give_up_after:
            self._shut_until = self._clock() + self.probe_every_s


def behind(
    requests: Sequence[RecRequest], recent: Sequence[Row | None], window: Sequence[Row | None]
) -> list[int]:
    """Positions of the requests whose trigger neither of the user's rows holds yet (pure)."""
    return [
        n
        for n, (req, r, w) in enumerate(zip(requests, recent, window, strict=True))
        if req.trigger is not None
        and not row_includes(r, req.trigger)
        and not row_includes(w, req.trigger)
    ]


def wait_for_triggers(
    read: UserReader,
    requests: Sequence[RecRequest],
    recent: list[Row | None],
    window: list[Row | None],
    wait_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    pending: list[int] | None = None,
) -> list[int]:
    """Re-read the users behind their trigger until none is, or ``wait_s`` has passed.

    ``pending``: the positions already found behind, when the caller has them.
    Updates ``recent`` and ``window`` in place; returns the positions still behind.
    A Redis error propagates: the caller's fallback handles it like any other read.
    """
    if pending is None:
        pending = behind(requests, recent, window)
    deadline = clock() + wait_s
    while pending and clock() < deadline:
        sleep(min(POLL_S, max(0.0, deadline - clock())))
        fresh_recent, fresh_window = read([requests[n].user_id for n in pending])
        for n, r, w in zip(pending, fresh_recent, fresh_window, strict=True):
            recent[n], window[n] = r, w
        still = behind([requests[n] for n in pending], fresh_recent, fresh_window)
        pending = [pending[i] for i in still]
    return pending


def with_triggers(
    requests: Sequence[RecRequest],
    users: Sequence[UserFeatures],
    still_behind: Sequence[int],
    fold: bool,
    limit: int,
    excluded_behaviors: frozenset[str] = EXCLUDED_BEHAVIORS,
) -> tuple[list[UserFeatures], list[TriggerFeatures | None]]:
    """Each user's features with its trigger folded in where needed, and the outcome (pure).

    ``still_behind`` are the positions whose trigger the store lacks (all of them
    with a trigger when the store could not be read).
    """
    lacking = set(still_behind)
    out_users: list[UserFeatures] = []
    outcomes: list[TriggerFeatures | None] = []
    for n, (req, user) in enumerate(zip(requests, users, strict=True)):
        if req.trigger is None:
            out_users.append(user)
            outcomes.append(None)
        elif n not in lacking:
            out_users.append(user)
            outcomes.append("store")
        elif fold:
            out_users.append(fold_event(user, req.trigger, limit, excluded_behaviors))
            outcomes.append("folded")
        else:
            out_users.append(user)
            outcomes.append("missing")
    return out_users, outcomes
