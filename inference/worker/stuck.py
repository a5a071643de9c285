"""Telling a Kafka call that is slow from one that is blocked for good.

librdkafka can block a transactional call past the timeout it was given, for
ever (issues 5456 and 5511: ``send_offsets_to_transaction`` waiting on a
coordinator that moved during a broker restart). Every call the sink makes
has a timeout of a few seconds and is retried while the broker is away, so a
single call still running well past its own timeout is blocked; so is a whole
delivery running well past the delivery timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from inference.worker.errors import DeliveryStuck

T = TypeVar("T")

# How long past its own timeout a call (or a delivery) may run before it counts as blocked:
# ten seconds past a five-second timeout is no slow broker (a restart takes about 20 s).
STUCK_MARGIN_S = 10.0
CHECK_EVERY_S = 1.0


class CallClock:
    """When the client call in progress should have returned (None: no call running)."""

    def __init__(self) -> None:
        self.due: float | None = None

    def start(self, timeout_s: float) -> None:
        self.due = time.monotonic() + timeout_s

    def done(self) -> None:
        self.due = None

    @contextmanager
    def timing(self, timeout_s: float) -> Iterator[None]:
        """Marks the block as one client call given ``timeout_s``."""
        self.start(timeout_s)
        try:
            yield
        finally:
            self.done()

    def overdue_s(self) -> float:
        due = self.due
        return 0.0 if due is None else max(0.0, time.monotonic() - due)


async def unless_stuck(
    work: Awaitable[T],
    clock: CallClock,
    give_up_s: float,
    margin_s: float = STUCK_MARGIN_S,
    check_every_s: float = CHECK_EVERY_S,
) -> T:
    """``work``'s result; :class:`DeliveryStuck` once a call of it is ``margin_s`` past its
    timeout, or the whole of it ``margin_s`` past ``give_up_s``."""
    task = asyncio.ensure_future(work)
    deadline = time.monotonic() + give_up_s + margin_s
    while True:
        done, _ = await asyncio.wait({task}, timeout=check_every_s)
        if done:
            return task.result()
        overdue = clock.overdue_s()
        if overdue > margin_s:
            raise DeliveryStuck(
                f"a Kafka call has not returned {overdue:.0f} s past its own timeout "
                "(librdkafka issues 5456/5511)"
            )
        if time.monotonic() > deadline:
            raise DeliveryStuck(
                f"a delivery has run {margin_s:.0f} s past the delivery timeout "
                f"({give_up_s:.0f} s; librdkafka issues 5456/5511)"
            )
