from inference.worker.gather import SMOOTHING, GatherClock


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_in_hand_means_no_gathering() -> None:
    assert GatherClock(prepare_ahead=True, clock=Clock()).gather_left() == 0.0


def test_without_prepare_ahead_a_batch_gathers_until_the_ranker_is_free() -> None:
    clock = Clock()
    gather = GatherClock(prepare_ahead=False, clock=clock)
    gather.prepared(0.003)
    gather.handed_over()
    clock.now += 0.004
    gather.scored()
    gather.handed_over()
    clock.now += 10
    assert gather.gather_left() == float("inf")
    gather.scored()
    assert gather.gather_left() == 0.0


def test_until_times_are_known_it_gathers_until_the_ranker_is_free() -> None:
    gather = GatherClock(prepare_ahead=True, clock=Clock())
    gather.handed_over()
    assert gather.gather_left() == float("inf")


def test_prepare_ahead_stops_gathering_the_preparing_time_before_scoring_ends() -> None:
    clock = Clock()
    gather = GatherClock(prepare_ahead=True, clock=clock)
    gather.handed_over()
    clock.now += 0.004  # scoring took 4 ms
    gather.scored()
    gather.prepared(0.003)  # preparing 3 ms
    gather.handed_over()
    assert abs(gather.gather_left() - 0.001) < 1e-9
    clock.now += 0.0015
    assert gather.gather_left() < 0  # past the cut-off: prepare now, ready as scoring ends


def test_times_are_moving_averages() -> None:
    clock = Clock()
    gather = GatherClock(prepare_ahead=True, clock=clock)
    for took in (0.004, 0.014):
        gather.handed_over()
        clock.now += took
        gather.scored()
    assert abs(gather.scoring_s - (0.004 + SMOOTHING * 0.010)) < 1e-9  # type: ignore[operator]
    gather.prepared(0.002)
    gather.prepared(0.012)
    assert abs(gather.preparing_s - (0.002 + SMOOTHING * 0.010)) < 1e-9  # type: ignore[operator]


def test_a_batch_scored_twice_counts_once() -> None:
    clock = Clock()
    gather = GatherClock(prepare_ahead=True, clock=clock)
    gather.handed_over()
    clock.now += 0.004
    gather.scored()
    clock.now += 1
    gather.scored()  # the failure path clears it again: no sample of a second
    assert abs(gather.scoring_s - 0.004) < 1e-9  # type: ignore[operator]
