"""How the Triton client classifies failures: an outage is a fallback, a bug is not."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from inference.serving.probe import probe_inputs
from inference.worker.errors import RankerTimeout, RankerUnavailable
from inference.worker.scoring import TritonScorer
from tests.conftest import free_port


def inputs() -> dict[str, Any]:
    return probe_inputs(users=1, candidates=3, num_items=10, num_categories=4)


def test_no_server_listening_is_an_outage() -> None:
    async def run() -> None:
        scorer = TritonScorer(f"127.0.0.1:{free_port()}", "ranker", 2.0, 1)
        try:
            await scorer.score(inputs())
        finally:
            await scorer.close()

    with pytest.raises(RankerUnavailable):
        asyncio.run(run())


def test_a_client_bug_propagates_instead_of_looking_like_an_outage() -> None:
    async def broken_infer(*args: Any, **kwargs: Any) -> None:
        raise TypeError("infer() got an unexpected keyword argument")

    async def run() -> None:
        scorer = TritonScorer(f"127.0.0.1:{free_port()}", "ranker", 2.0, 1)
        scorer._client.infer = broken_infer  # the bug sits in the call itself
        try:
            await scorer.score(inputs())
        finally:
            await scorer.close()

    with pytest.raises(TypeError):
        asyncio.run(run())


def test_the_wait_for_a_free_slot_counts_against_the_budget() -> None:
    """Behind a call that hangs, the next one times out within the budget, not after it."""
    hung = asyncio.Event()

    async def hanging_infer(*args: Any, **kwargs: Any) -> None:
        hung.set()
        await asyncio.sleep(60)

    async def run() -> float:
        scorer = TritonScorer(f"127.0.0.1:{free_port()}", "ranker", 0.3, 1)
        scorer._client.infer = hanging_infer  # holds the only slot
        first = asyncio.create_task(scorer.score(inputs()))
        await hung.wait()
        started = time.monotonic()
        try:
            with pytest.raises(RankerTimeout, match="no Triton slot"):
                await scorer.score(inputs())
            return time.monotonic() - started
        finally:
            first.cancel()
            await scorer.close()

    assert asyncio.run(run()) < 1.0
