"""A Kafka call blocked for good is told apart from a slow delivery."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from inference.worker.errors import DeliveryStuck
from inference.worker.stuck import CallClock, unless_stuck


def blocked_call(clock: CallClock, timeout_s: float, release: threading.Event) -> str:
    """A call given ``timeout_s`` that returns only when released (librdkafka's hang)."""
    clock.start(timeout_s)
    try:
        release.wait()
        return "done"
    finally:
        clock.done()


def test_a_call_blocked_past_its_timeout_is_stuck_long_before_the_delivery_timeout() -> None:
    clock, release = CallClock(), threading.Event()
    started = time.monotonic()

    async def run() -> None:
        work = asyncio.to_thread(blocked_call, clock, 0.1, release)
        try:
            await unless_stuck(work, clock, give_up_s=300, margin_s=0.3, check_every_s=0.05)
        finally:
            release.set()

    with pytest.raises(DeliveryStuck, match="past its own timeout"):
        asyncio.run(run())
    assert time.monotonic() - started < 5  # not the 300 s delivery timeout


def test_slow_calls_within_their_timeouts_are_waited_for() -> None:
    clock = CallClock()

    def slow_retries() -> str:
        for _ in range(5):  # each call returns within its own timeout: retrying is fine
            clock.start(0.2)
            time.sleep(0.1)
            clock.done()
        return "delivered"

    async def run() -> str:
        return await unless_stuck(
            asyncio.to_thread(slow_retries), clock, give_up_s=10, margin_s=0.15, check_every_s=0.02
        )

    assert asyncio.run(run()) == "delivered"


def test_a_delivery_past_its_whole_timeout_is_stuck_even_between_calls() -> None:
    clock, release = CallClock(), threading.Event()

    async def run() -> None:
        try:
            await unless_stuck(
                asyncio.to_thread(release.wait), clock, give_up_s=0.1, margin_s=0.1,
                check_every_s=0.02,
            )  # fmt: skip
        finally:
            release.set()

    with pytest.raises(DeliveryStuck, match="past the delivery timeout"):
        asyncio.run(run())
