from __future__ import annotations

from jobs.replay.pacing import Pacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_paces_by_event_time_divided_by_speed() -> None:
    clock = FakeClock()
    pacer = Pacer(speed=10.0, clock=clock, sleep=clock.sleep)
    for ts in (0, 1_000, 1_000, 5_000):
        pacer.wait_for(ts)
    assert clock.slept == [0.1, 0.4]


def test_unpaced_never_sleeps_and_late_events_go_at_once() -> None:
    clock = FakeClock()
    assert Pacer(speed=0, clock=clock, sleep=clock.sleep).wait_for(10**12) == 0
    pacer = Pacer(speed=1.0, clock=clock, sleep=clock.sleep)
    pacer.wait_for(10_000)
    clock.now += 5
    assert pacer.wait_for(12_000) == 0.0
    assert pacer.wait_for(9_000) == 0.0
    assert clock.slept == []
