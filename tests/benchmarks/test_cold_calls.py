import time

from tests.benchmarks.cold_calls import timed_calls


def test_each_call_waits_its_pause_and_the_pause_is_not_timed() -> None:
    seen: list[object] = []
    start = time.perf_counter()
    times = timed_calls(seen.append, {"x": 1}, pause_s=0.01, calls=3)
    elapsed = time.perf_counter() - start
    assert seen == [{"x": 1}] * 3
    assert elapsed >= 0.03  # three pauses were slept
    assert len(times) == 3 and all(0 <= ms < 5 for ms in times)  # none of them timed
