"""The real tritonserver scores like the model in process; its metrics port counts requests.

`ranker_python` is compared with ONNX Runtime on the same ONNX file, `ranker_torch`
(eager fp32 on this GPU-less host) with jobs.ranker's DIN on the same weights.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import torch
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

from inference.serving.probe import probe_inputs
from jobs.ranker.artifacts import load_model
from tests.conftest import PYTHON_MODELS, TritonServer
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS
from tests.inference.serving.client import infer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(triton: TritonServer) -> Iterator[grpcclient.InferenceServerClient]:
    with grpcclient.InferenceServerClient(triton.grpc_url) as grpc:
        yield grpc


Inputs = dict[str, np.ndarray[Any, Any]]
# ONNX Runtime's kernels against themselves; torch's fp32 against itself, with a
# different thread count in the served instance (so another summation order).
TOLERANCE = {"ranker_python": 1e-5, "ranker_torch": 1e-6}


class InProcess:
    """Both in-process references over the session's small artifacts."""

    def __init__(self, artifacts: Any) -> None:
        path = str(artifacts / "model.onnx")
        self.session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        self.din = load_model(artifacts)

    def scores(self, model: str, inputs: Inputs) -> np.ndarray[Any, Any]:
        if model == "ranker_python":
            return np.asarray(self.session.run(["scores"], inputs)[0])
        with torch.inference_mode():
            scores = self.din(*(torch.from_numpy(inputs[name]) for name in inputs))
        return np.asarray(scores.numpy())


@pytest.fixture(scope="module")
def in_process(triton: TritonServer) -> InProcess:
    return InProcess(triton.small_artifacts)


def _inputs(users: int, candidates: int, seed: int) -> Inputs:
    inputs = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users, candidates)
    rng = np.random.default_rng(seed)  # different values per case, same shapes
    for name in ("cand_items", "seq_items"):
        inputs[name] = rng.permutation(inputs[name].ravel()).reshape(inputs[name].shape)
    return inputs


@pytest.mark.parametrize("model", PYTHON_MODELS)
@pytest.mark.parametrize(("users", "candidates"), [(1, 1), (1, 200), (5, 1), (8, 200)])
def test_served_scores_equal_the_model_in_process(
    client: Any, in_process: InProcess, model: str, users: int, candidates: int
) -> None:
    inputs = _inputs(users, candidates, seed=users * 1000 + candidates)
    served, _version = infer(client, model, inputs)
    expected = in_process.scores(model, inputs)
    assert served.shape == (users, candidates)
    np.testing.assert_allclose(served, expected, atol=TOLERANCE[model], rtol=0)
    assert np.all(served > 0)  # a broken numpy path in the stub gives zeros


@pytest.mark.parametrize("model", PYTHON_MODELS)
def test_concurrent_requests_of_mixed_shapes_batch_correctly(
    client: Any, in_process: InProcess, model: str
) -> None:
    cases = [_inputs(1 + i % 3, (1, 7, 200)[i % 3], seed=i) for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        served = list(pool.map(lambda x: infer(client, model, x)[0], cases))
    for inputs, scores in zip(cases, served, strict=True):
        expected = in_process.scores(model, inputs)
        np.testing.assert_allclose(scores, expected, atol=TOLERANCE[model], rtol=0)


def test_the_torch_model_caps_its_threads_and_runs_eager_fp32_on_cpu(
    triton: TritonServer, client: Any
) -> None:
    """Each instance applies config.pbtxt's thread caps in initialize and says so in the log."""
    lines = [line for line in triton.log_path.read_text().splitlines() if "ranker_torch_0_" in line]
    started = [line for line in lines if "intra-op threads" in line]
    # KIND_AUTO with no GPU: Triton made both instances CPU ones.
    assert len(started) == 2, lines
    for line in started:
        assert "cpu torch.float32, intra-op threads 1, inter-op threads 1, eager" in line


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
    # Triton records a request's statistics when the backend releases it, which
    # can be just after the response reached the client: wait a bounded while for
    # the last one, then demand the exact count (a fourth would fail as surely).
    deadline = time.monotonic() + 5.0
    while successful_requests(triton) - before < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert successful_requests(triton) - before == 3


@pytest.mark.parametrize("model", PYTHON_MODELS)
def test_serving_prints_no_traceback(triton: TritonServer, client: Any, model: str) -> None:
    """The stub renames a consumed DLPack capsule where numpy's destructor does not look:
    unless request_handling renames it back, every response prints a traceback."""
    for users in (1, 4):
        infer(client, model, _inputs(users, 50, seed=users))
    output = triton.log_path.with_name("triton.out").read_text(errors="replace")
    assert "Traceback" not in output, output[-2000:]
