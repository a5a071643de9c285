"""The real tritonserver scores like ONNX Runtime in process; its metrics port counts requests."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

from inference.serving.probe import probe_inputs
from tests.conftest import TritonServer
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS
from tests.inference.serving.client import infer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(triton: TritonServer) -> Iterator[grpcclient.InferenceServerClient]:
    with grpcclient.InferenceServerClient(triton.grpc_url) as grpc:
        yield grpc


@pytest.fixture(scope="module")
def in_process(triton: TritonServer) -> Any:
    path = str(triton.small_artifacts / "model.onnx")
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def _inputs(users: int, candidates: int, seed: int) -> dict[str, np.ndarray[Any, Any]]:
    inputs = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users, candidates)
    rng = np.random.default_rng(seed)  # different values per case, same shapes
    for name in ("cand_items", "seq_items"):
        inputs[name] = rng.permutation(inputs[name].ravel()).reshape(inputs[name].shape)
    return inputs


@pytest.mark.parametrize(("users", "candidates"), [(1, 1), (1, 200), (5, 1), (8, 200)])
def test_served_scores_equal_onnx_runtime(
    triton: TritonServer, client: Any, in_process: Any, users: int, candidates: int
) -> None:
    inputs = _inputs(users, candidates, seed=users * 1000 + candidates)
    served, _version = infer(client, triton.model, inputs)
    (expected,) = in_process.run(["scores"], inputs)
    assert served.shape == (users, candidates)
    np.testing.assert_allclose(served, expected, atol=1e-5, rtol=0)
    assert np.all(served > 0)  # a broken numpy path in the stub gives zeros


def test_concurrent_requests_of_mixed_shapes_batch_correctly(
    triton: TritonServer, client: Any, in_process: Any
) -> None:
    cases = [_inputs(1 + i % 3, (1, 7, 200)[i % 3], seed=i) for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        served = list(pool.map(lambda x: infer(client, triton.model, x)[0], cases))
    for inputs, scores in zip(cases, served, strict=True):
        (expected,) = in_process.run(["scores"], inputs)
        np.testing.assert_allclose(scores, expected, atol=1e-5, rtol=0)


def successful_requests(triton: TritonServer) -> float:
    """Triton's ``nv_inference_request_success`` for the test model (0 before any request)."""
    with urllib.request.urlopen(triton.metrics_url, timeout=5) as response:
        text = response.read().decode()
    lines = [
        line
        for line in text.splitlines()
        if line.startswith("nv_inference_request_success") and f'model="{triton.model}"' in line
    ]
    return float(lines[0].rsplit(" ", 1)[1]) if lines else 0.0


def test_metrics_port_counts_successful_requests(triton: TritonServer, client: Any) -> None:
    before = successful_requests(triton)
    for seed in range(3):
        infer(client, triton.model, _inputs(1, 3, seed=seed))
    # The session's other tests also use this server, so count the difference.
    assert successful_requests(triton) - before == 3
