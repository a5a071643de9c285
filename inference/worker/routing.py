"""The worker's view of the traffic split (:mod:`schemas.routing`), refreshed in the background.

A thread reads the routing key every ``poll_ms`` and swaps in what it finds; the
hot path only reads an attribute. What the worker does when the key cannot be read
is stated here, not left to chance:

* Redis unreachable, or the key holds something that is not a valid routing: the
  last good routing stays in force (a canary keeps its share through a Redis blip)
  and the failure is logged once per change of state;
* the key deleted: no split any more, requests go to Triton's default version.

After each read the watcher reports back (``report``) a :class:`RoutingAck`: the
routing in force and every version a batch may still ask for, the batches that
took an older view (:meth:`RoutingWatcher.acquire`) until they are released. A
controller unloads a version only when no live worker's report names it. A report
that cannot be written is logged once per change of state; it never holds a batch.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

import redis

from schemas.codec import wall_clock_ms
from schemas.routing import (
    Routing,
    RoutingAck,
    RoutingError,
    Variant,
    boundaries,
    decode,
    variant_of,
    versions_in_use,
)

logger = logging.getLogger(__name__)


class RoutingView:
    """The routing in force and its precomputed bucket edges (immutable; swapped whole)."""

    def __init__(self, routing: Routing | None) -> None:
        self.routing = routing
        self._edges = boundaries(routing) if routing is not None else []
        self.in_use = versions_in_use(routing)
        # Without a split every request asks for Triton's default (newest ready) version.
        self.unversioned = routing is None

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
        report: Callable[[RoutingAck], None] | None = None,
        worker: str = "worker",
        forget: Callable[[], None] = lambda: None,  # removes this worker's report at stop
    ) -> None:
        super().__init__(daemon=True, name="routing")
        self._read = read
        self._poll_s = poll_ms / 1000
        self._on_change = on_change
        self._report, self._forget, self.worker = report, forget, worker
        self._stopping = threading.Event()
        self._failing = self._report_failing = False
        # Views taken by batches not yet released (one view may back several batches).
        self._lock = threading.Lock()
        self._taken: collections.Counter[int] = collections.Counter()
        self._taken_views: dict[int, RoutingView] = {}
        self.view = NO_SPLIT
        self.refresh()  # in force before the first batch, not a poll later

    def run(self) -> None:
        while not self._stopping.wait(self._poll_s):
            self.refresh()

    def acquire(self) -> RoutingView:
        """The view in force, counted as in use until it is given to :meth:`release`."""
        with self._lock:
            view = self.view
            self._taken[id(view)] += 1
            self._taken_views[id(view)] = view
        return view

    def release(self, view: RoutingView) -> None:
        with self._lock:
            self._taken[id(view)] -= 1
            if self._taken[id(view)] <= 0:
                del self._taken[id(view)], self._taken_views[id(view)]

    def ack(self) -> RoutingAck:
        """This worker's report: the routing in force and every version still asked for."""
        with self._lock:
            views = [self.view, *self._taken_views.values()]
        routing = self.view.routing
        return RoutingAck(
            worker=self.worker,
            revision=None if routing is None else routing.revision,
            updated_at=None if routing is None else routing.updated_at,
            in_use=sorted({version for v in views for version in v.in_use}),
            unversioned=any(v.unversioned for v in views),
            at_ms=wall_clock_ms(),
        )

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
        self._send_ack()

    def _send_ack(self) -> None:
        if self._report is None:
            return
        try:
            self._report(self.ack())
        except redis.RedisError as error:
            # A controller that hears from no worker waits out its drain time instead.
            if not self._report_failing:
                logger.warning("routing not acknowledged (controllers wait longer): %s", error)
            self._report_failing = True
            return
        if self._report_failing:
            logger.info("routing acknowledged again")
        self._report_failing = False

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(self._poll_s + 5)
        try:
            self._forget()  # a stopped worker asks for nothing: no controller waits on it
        except redis.RedisError as error:
            logger.warning("routing acknowledgement not removed (it goes stale): %s", error)


def describe(routing: Routing | None) -> str:
    if routing is None:
        return "no split (Triton's default version)"
    shares = ", ".join(f"{v.name} v{v.version} {v.share_pct:g}%" for v in routing.variants)
    return f"revision {routing.revision}: {shares}"
