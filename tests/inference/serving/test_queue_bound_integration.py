"""Triton's bounded queue: past it a request is refused at once, not queued for minutes."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]
from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

from inference.serving.probe import probe_inputs
from tests.conftest import TritonServer
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS
from tests.inference.serving.client import infer

pytestmark = pytest.mark.integration

MODEL = "ranker_python_queue_bound"
QUEUE = 2


@pytest.fixture
def bounded(triton: TritonServer) -> Iterator[grpcclient.InferenceServerClient]:
    """``ranker_python`` as its own model with a queue of ``QUEUE`` requests."""
    folder = triton.repository / MODEL
    shutil.copytree(triton.repository / "ranker_python", folder)
    config = folder / "config.pbtxt"
    text = config.read_text().replace('name: "ranker_python"', f'name: "{MODEL}"')
    text = re.sub(r"max_queue_size: \d+", f"max_queue_size: {QUEUE}", text)
    # One instance: two big requests then keep it busy, so what comes next must queue.
    config.write_text(re.sub(r"KIND_CPU count: \d+", "KIND_CPU count: 1", text))
    with grpcclient.InferenceServerClient(triton.grpc_url) as client:
        client.load_model(MODEL)
        try:
            yield client
        finally:
            client.unload_model(MODEL)
            shutil.rmtree(folder)


def test_requests_past_the_queue_are_refused_at_once_and_the_rest_answered(
    bounded: grpcclient.InferenceServerClient,
) -> None:
    big = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users=64, candidates=200)

    def call(_: int) -> tuple[str, float]:
        started = time.monotonic()
        try:
            infer(bounded, MODEL, big)
            return "answered", time.monotonic() - started
        except InferenceServerException as exc:
            return str(exc), time.monotonic() - started

    with ThreadPoolExecutor(24) as pool:
        outcomes = list(pool.map(call, range(24)))
    refused = [(message, seconds) for message, seconds in outcomes if message != "answered"]
    assert len(refused) < len(outcomes), "nothing was answered"
    assert len(refused) >= 12, outcomes  # at most 4 running (256 users) plus QUEUE waiting
    assert all("queue" in message.lower() for message, _ in refused), refused[:3]
    slowest_answer = max(seconds for message, seconds in outcomes if message == "answered")
    assert max(seconds for _, seconds in refused) < slowest_answer


def test_a_request_still_waiting_past_its_own_timeout_is_dropped_unrun(
    bounded: grpcclient.InferenceServerClient,
) -> None:
    # Each busy request a whole batch (256 users: never merged with the other), so one
    # runs while the other waits, leaving one place in the queue. When the small request
    # lands is up to the threads and the network, so it is sent again until one lands
    # while the instance is busy (at 64 users the two were merged into one short run,
    # and a single small request sent after a fixed sleep could find the instance idle).
    big = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users=256, candidates=200)
    small = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users=1, candidates=10)
    tensors = []
    for name, array in small.items():
        tensor = grpcclient.InferInput(
            name, list(array.shape), "INT32" if array.dtype.kind == "i" else "FP32"
        )
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    refusals: list[str] = []
    answered_while_idle = 0
    with ThreadPoolExecutor(QUEUE) as pool:
        busy = [pool.submit(infer, bounded, MODEL, big) for _ in range(QUEUE)]
        while not all(future.done() for future in busy):
            try:
                bounded.infer(MODEL, tensors, timeout=1000, client_timeout=30)  # 1 ms queued
                answered_while_idle += 1
            except InferenceServerException as exc:
                refusals.append(str(exc))
                if re.search(r"(?i)timeout", str(exc)):
                    break
        for future in busy:
            future.result()
    assert any(re.search(r"(?i)timeout", message) for message in refusals), (
        f"no small request timed out in the queue: {answered_while_idle} answered, "
        f"refused: {refusals[:3]}"
    )
