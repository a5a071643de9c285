"""When a version may be unloaded: the workers' acknowledgements against a published
routing (pure, no services)."""

from __future__ import annotations

import itertools

from inference.serving.drain import Drain, pending, wait_drained
from schemas.routing import Routing, RoutingAck, Variant

NOW = 1_700_000_000_000
ENDED = Routing("ranker_python", [Variant("a", 1, 100.0)], 7, NOW - 500)
OLDER = Routing("ranker_python", [Variant("b", 2, 50.0), Variant("a", 1, 50.0)], 6, NOW - 9000)


def ack(
    worker: str, seen: Routing, in_use: list[int], at_ms: int = NOW, unversioned: bool = False
) -> RoutingAck:
    return RoutingAck(worker, seen.revision, seen.updated_at, in_use, unversioned, at_ms)


def test_a_version_is_clear_only_once_every_live_worker_has_seen_the_routing_without_it() -> None:
    # w1 has the new routing but a batch of the old split is still being scored.
    acks = [ack("w1", ENDED, [1, 2]), ack("w2", OLDER, [1, 2])]
    state = pending(acks, ENDED, {2}, NOW, 10_000)
    assert state.waiting == ("w1", "w2") and not state.drained
    acks = [ack("w1", ENDED, [1]), ack("w2", OLDER, [1, 2])]
    assert pending(acks, ENDED, {2}, NOW, 10_000).waiting == ("w2",)
    acks = [ack("w1", ENDED, [1]), ack("w2", ENDED, [1])]
    assert pending(acks, ENDED, {2}, NOW, 10_000).drained


def test_a_silent_worker_is_gone_and_not_waited_for() -> None:
    acks = [ack("w1", ENDED, [1]), ack("gone", OLDER, [1, 2], at_ms=NOW - 20_000)]
    state = pending(acks, ENDED, {2}, NOW, 10_000)
    assert state.stale == ("gone",) and state.live == ("w1",) and state.drained


def test_moving_off_the_default_version_waits_for_unversioned_batches() -> None:
    acks = [ack("w1", ENDED, [1], unversioned=True)]
    assert pending(acks, ENDED, set(), NOW, 10_000).drained
    assert not pending(acks, ENDED, set(), NOW, 10_000, allow_unversioned=False).drained


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_wait_ends_on_acknowledgements_the_drain_time_or_the_timeout() -> None:
    clock = Clock()
    answers = itertools.chain(
        [[ack("w1", OLDER, [1, 2])]] * 3, itertools.repeat([ack("w1", ENDED, [1])])
    )
    drain = Drain(timeout_s=5, stale_s=10, fallback_s=1, poll_s=0.1)
    done = wait_drained(lambda: next(answers), ENDED, {2}, drain, clock=clock,
                        sleep=clock.sleep, now_ms=lambda: NOW)  # fmt: skip
    assert done.by == "acknowledgements" and abs(done.seconds - 0.3) < 1e-9

    clock = Clock()
    done = wait_drained(list, ENDED, {2}, drain, clock=clock, sleep=clock.sleep, now_ms=lambda: NOW)
    assert done.by == "drain time" and done.seconds >= 1

    clock = Clock()
    stuck = [ack("w1", OLDER, [1, 2])]
    done = wait_drained(lambda: stuck, ENDED, {2}, drain, clock=clock, sleep=clock.sleep,
                        now_ms=lambda: NOW)  # fmt: skip
    assert done.by == "timeout" and done.not_acknowledged == ("w1",) and done.seconds >= 5
