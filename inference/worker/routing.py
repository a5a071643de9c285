"""The worker's view of the traffic split (:mod:`schemas.routing`), refreshed in the background.

A thread reads the routing key every ``poll_ms`` and swaps in what it finds; the
hot path only reads an attribute. What the worker does when the key cannot be read
is stated here, not left to chance:

* Redis unreachable, or the key holds something that is not a valid routing: the
  last good routing stays in force (a canary keeps its share through a Redis blip)
  and the failure is logged once per change of state;
* the key deleted: no split any more, requests go to Triton's default version.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis

from schemas.routing import Routing, RoutingError, Variant, boundaries, decode, variant_of

logger = logging.getLogger(__name__)


class RoutingView:
    """The routing in force and its precomputed bucket edges (immutable; swapped whole)."""

    def __init__(self, routing: Routing | None) -> None:
        self.routing = routing
        self._edges = boundaries(routing) if routing is not None else []

    def variant(self, user_id: int) -> Variant | None:
        """The user's variant, or None when there is no split."""
        if self.routing is None:
            return None
        return variant_of(self.routing, user_id, self._edges)


NO_SPLIT = RoutingView(None)


class RoutingWatcher(threading.Thread):
    def __init__(
        self,
        read: Callable[[], bytes | None],  # the key's value, None when absent
        poll_ms: int,
        on_change: Callable[[Routing | None], None] = lambda _: None,
    ) -> None:
        super().__init__(daemon=True, name="routing")
        self._read = read
        self._poll_s = poll_ms / 1000
        self._on_change = on_change
        self._stopping = threading.Event()
        self._failing = False
        self.view = NO_SPLIT
        self.refresh()  # in force before the first batch, not a poll later

    def run(self) -> None:
        while not self._stopping.wait(self._poll_s):
            self.refresh()

    def refresh(self) -> None:
        try:
            raw = self._read()
            routing = None if raw is None else decode(raw)
        except (redis.RedisError, RoutingError) as error:
            if not self._failing:
                logger.warning("routing not refreshed, the last one stays in force: %s", error)
            self._failing = True
            return
        if self._failing:
            logger.info("routing readable again")
        self._failing = False
        if routing != self.view.routing:
            self.view = RoutingView(routing)
            self._on_change(routing)
            logger.info("routing now %s", describe(routing))

    def stop(self) -> None:
        self._stopping.set()


def describe(routing: Routing | None) -> str:
    if routing is None:
        return "no split (Triton's default version)"
    shares = ", ".join(f"{v.name} v{v.version} {v.share_pct:g}%" for v in routing.variants)
    return f"revision {routing.revision}: {shares}"
