"""Retiring a model version only once no worker can still ask for it.

The order, for every split, canary step, promotion, rollback and unload:

1. load the new version on every endpoint and wait until Triton reports it ready;
2. publish the routing that uses it (the routing key, :mod:`schemas.routing`);
3. before a version is unloaded, publish routing that leaves it out and wait until
   every live worker has acknowledged *that* routing with the version out of use
   (:class:`schemas.routing.RoutingAck`: a worker counts the batches still being
   scored under the older routing, so an acknowledgement means drained, not just read);
4. unload it.

Unloading at step 3 without the wait fails the requests still routed to the
version: a worker applies a change within its routing poll, and a batch already
being scored keeps the routing it started with.

A worker whose acknowledgement is older than ``stale_s`` is gone (or cannot reach
Redis, and then it answers through the version Triton still has ready, flagged
``rerouted_from``): it is named and not waited for. With no worker acknowledging at
all (workers of a release before acknowledgements), the wait is ``fallback_s``,
which must cover the workers' routing poll plus one batch. After ``timeout_s`` the
controller goes ahead and says who had not acknowledged: a rollback must not wait
forever on a worker that is stuck.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from schemas.codec import wall_clock_ms
from schemas.routing import Routing, RoutingAck

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Drain:
    """How long to wait for the workers' acknowledgements (seconds)."""

    timeout_s: float = 30.0
    # Workers acknowledge every routing poll (1 s by default): ten polls missed is gone.
    stale_s: float = 10.0
    # No acknowledgement from anyone: the workers' default poll (1 s) plus a batch's budget.
    fallback_s: float = 3.0
    poll_s: float = 0.1


@dataclass(frozen=True)
class Pending:
    """Where the live workers stand against one published routing (pure result)."""

    live: tuple[str, ...]
    waiting: tuple[str, ...]  # live, and not yet clear of the retired versions
    stale: tuple[str, ...]

    @property
    def drained(self) -> bool:
        return bool(self.live) and not self.waiting


def pending(
    acks: Sequence[RoutingAck],
    routing: Routing,
    retire: Collection[int],
    now_ms: int,
    stale_ms: float,
    allow_unversioned: bool = True,
) -> Pending:
    """Which live workers still may ask for a version of ``retire`` (or, with
    ``allow_unversioned`` false, for Triton's default version) under ``routing`` (pure)."""
    live, waiting, stale = [], [], []
    for ack in acks:
        if now_ms - ack.at_ms > stale_ms:
            stale.append(ack.worker)
            continue
        live.append(ack.worker)
        clear = ack.has_seen(routing) and not set(retire).intersection(ack.in_use)
        if not clear or (ack.unversioned and not allow_unversioned):
            waiting.append(ack.worker)
    return Pending(tuple(live), tuple(waiting), tuple(stale))


@dataclass(frozen=True)
class Drained:
    seconds: float
    by: str  # "acknowledgements", "drain time" (nobody acknowledges) or "timeout"
    workers: int
    not_acknowledged: tuple[str, ...] = ()

    def line(self) -> str:
        text = f"drained in {self.seconds:.2f} s by {self.by} ({self.workers} worker(s))"
        if self.not_acknowledged:
            text += f"; not acknowledged: {', '.join(self.not_acknowledged)}"
        return text


def wait_drained(
    read_acks: Callable[[], list[RoutingAck]],
    routing: Routing,
    retire: Collection[int],
    drain: Drain,
    allow_unversioned: bool = True,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now_ms: Callable[[], int] = wall_clock_ms,
) -> Drained:
    """Wait until every live worker has acknowledged ``routing`` clear of ``retire``."""
    began = clock()
    reported_stale: set[str] = set()
    while True:
        state = pending(
            read_acks(), routing, retire, now_ms(), drain.stale_s * 1000, allow_unversioned
        )
        for worker in set(state.stale) - reported_stale:
            log.warning("worker %s has not acknowledged in %g s: not waited for",
                        worker, drain.stale_s)  # fmt: skip
            reported_stale.add(worker)
        waited = clock() - began
        if state.drained:
            return Drained(waited, "acknowledgements", len(state.live))
        if not state.live and waited >= drain.fallback_s:
            return Drained(waited, "drain time", 0)
        if waited >= drain.timeout_s:
            log.warning("routing revision %d not acknowledged by %s in %g s; going ahead",
                        routing.revision, ", ".join(state.waiting), drain.timeout_s)  # fmt: skip
            return Drained(waited, "timeout", len(state.live), state.waiting)
        sleep(drain.poll_s)
