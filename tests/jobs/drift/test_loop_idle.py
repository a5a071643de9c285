"""The drift loop's idle cut-off counts from the end of the last check, not only the last record.

A check takes seconds (Evidently), longer than a short idle cut-off; records
that arrived meanwhile may come back only from the second poll after it. The
loop must not mistake the check's own duration for a quiet topic. The loop's
control flow runs here with scripted polls and a slow check, no Kafka.
"""

from __future__ import annotations

import threading
import time

from jobs.drift.loop import DriftLoop


class ScriptedWindow:
    def __init__(self) -> None:
        self.rows_seen = 0
        self.due_once = True

    def due(self, _now: float) -> bool:
        due, self.due_once = self.due_once and self.rows_seen > 0, False
        return due


class ScriptedLoop(DriftLoop):
    """DriftLoop.run over scripted poll results; ``check_now`` just takes its time."""

    def __init__(self, polls: list[int], check_seconds: float) -> None:  # no Kafka, no Evidently
        self.stop = threading.Event()
        self._window = ScriptedWindow()  # type: ignore[assignment]
        self._polls = polls
        self._check_seconds = check_seconds
        self.received: list[int] = []

    def _poll(self) -> int:
        time.sleep(0.01)
        got = self._polls.pop(0) if self._polls else 0
        self.received.append(got)
        self._window.rows_seen += got
        return got

    def check_now(self) -> None:  # type: ignore[override]
        time.sleep(self._check_seconds)


def test_records_after_a_slow_check_are_still_read() -> None:
    # One record, a check slower than the idle cut-off, an empty poll, then a record
    # that arrived during the check.
    loop = ScriptedLoop(polls=[1, 0, 1], check_seconds=0.5)
    loop.run(idle_seconds=0.3)
    assert sum(loop.received) == 2


def test_a_quiet_topic_still_ends_the_run() -> None:
    loop = ScriptedLoop(polls=[1], check_seconds=0.0)
    started = time.monotonic()
    checks = loop.run(idle_seconds=0.2)
    assert checks >= 1
    assert time.monotonic() - started < 5
