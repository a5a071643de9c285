"""A worker started before its model is servable warms up once it is (real Triton, Redis,
Kafka): it waits for the model, or, past its wait, polls and warms up when it appears."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from inference.serving.control import TritonControl
from runtime.kafka import KafkaSettings
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import WorkerProcess, WorkerTopics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
# The session's other python model: unloaded here, loaded again at the end.
MODEL = "ranker_torch"


@pytest.fixture
def unloaded(triton: TritonServer) -> Iterator[TritonControl]:
    control = TritonControl(triton.http_url)
    control.unload(MODEL)
    deadline = time.monotonic() + 60
    while control.is_ready(MODEL) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield control
    finally:
        control.load(MODEL)


def wait_for(worker: WorkerProcess, text: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while text not in (log := worker.output()):
        assert time.monotonic() < deadline, f"no {text!r} in:\n{log[-3000:]}"
        time.sleep(0.2)
    return log


@pytest.mark.parametrize("wait_ms", ["120000", "500"])
def test_the_warm_up_runs_against_a_servable_model(
    kafka: KafkaSettings,
    triton: TritonServer,
    unloaded: TritonControl,
    start_worker: StartWorker,
    wait_ms: str,
) -> None:
    worker = start_worker(WorkerTopics.create(kafka), triton=(triton.grpc_url, MODEL),
                          warm_up_wait_ms=wait_ms)  # fmt: skip
    if wait_ms == "500":  # past its wait, it polls, and warms up when the model appears
        wait_for(worker, "polling ", timeout_s=120)
    else:
        wait_for(worker, "before warming up", timeout_s=120)
        time.sleep(1.0)
        assert "polling " not in worker.output()  # no request is served cold meanwhile
    unloaded.load(MODEL)
    log = wait_for(worker, "warmed up", timeout_s=180)
    if wait_ms == "500":
        log = wait_for(worker, "warmed up (the model is servable now)", timeout_s=180)
    warmed = [line for line in log.splitlines() if "warmed up" in line]
    assert "stopped" not in warmed[-1] and "4 batches" in warmed[-1], warmed
    wait_for(worker, "polling ", timeout_s=60)
