"""The per-request deadline: which requests are late, and how a message's age is read."""

from __future__ import annotations

from inference.worker.deadline import appended_ms, late_positions


class Message:
    def __init__(self, kind: int, ms: int) -> None:
        self._timestamp = (kind, ms)

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp


def test_late_means_strictly_older_than_the_deadline() -> None:
    appended = [1_000, 1_500, None, 1_501]  # ages at 2,500: 1,500, 1,000, -, 999
    assert late_positions(appended, now_ms=2_500, deadline_ms=1_000) == {0}
    # One millisecond less of patience and the request exactly 1,000 ms old is late too.
    assert late_positions(appended, now_ms=2_500, deadline_ms=1_000 - 1) == {0, 1}
    assert late_positions(appended, now_ms=10**9, deadline_ms=0) == frozenset()  # off


def test_a_message_without_a_timestamp_is_never_late() -> None:
    assert appended_ms(Message(1, 1_700_000_000_000)) == 1_700_000_000_000  # create time
    assert appended_ms(Message(2, 1_700_000_000_000)) == 1_700_000_000_000  # append time
    assert appended_ms(Message(0, -1)) is None  # TIMESTAMP_NOT_AVAILABLE
    assert appended_ms(None) is None
