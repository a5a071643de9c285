"""The breaker in front of Triton and Redis (inference.worker.scoring), on a fake clock."""

from __future__ import annotations

from inference.worker.scoring import Breaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_closed_it_admits_every_call_and_a_failure_opens_it_for_a_period() -> None:
    clock = Clock()
    breaker = Breaker(0.25, clock)
    assert all(breaker.admits() for _ in range(5))
    breaker.failed()
    assert not breaker.closed
    clock.now = 0.24
    assert not breaker.admits()


def test_after_the_period_one_trial_goes_and_the_others_still_skip() -> None:
    clock = Clock()
    breaker = Breaker(0.25, clock)
    breaker.failed()
    clock.now = 0.25
    assert [breaker.admits() for _ in range(3)] == [True, False, False]
    # A trial that never reports (its caller died) does not keep the breaker open for good.
    clock.now = 0.5
    assert [breaker.admits() for _ in range(2)] == [True, False]


def test_a_trial_that_succeeds_closes_it_and_one_that_fails_opens_it_again() -> None:
    clock = Clock()
    breaker = Breaker(0.25, clock)
    breaker.failed()
    clock.now = 0.3
    assert breaker.admits()
    breaker.failed()  # still down: a whole period again, from now
    clock.now = 0.54
    assert not breaker.admits()
    clock.now = 0.55
    assert breaker.admits()
    breaker.succeeded()
    assert breaker.closed and all(breaker.admits() for _ in range(5))


def test_another_dependency_gets_a_closed_breaker_with_the_same_period() -> None:
    clock = Clock()
    breaker = Breaker(0.25, clock)
    breaker.failed()
    other = breaker.fresh()
    assert other.closed and other.admits()
    other.failed()
    clock.now = 0.25
    assert other.admits() and not other.admits()
