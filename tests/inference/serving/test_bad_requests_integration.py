"""Bad requests get a clear error from Triton; the server keeps serving the good ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]
from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

from inference.serving.probe import probe_inputs
from tests.conftest import PYTHON_MODELS, TritonServer
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS
from tests.inference.serving.client import infer

pytestmark = pytest.mark.integration

Inputs = dict[str, np.ndarray[Any, Any]]


@pytest.fixture(scope="module")
def client(triton: TritonServer) -> Iterator[grpcclient.InferenceServerClient]:
    with grpcclient.InferenceServerClient(triton.grpc_url) as grpc:
        yield grpc


def _good() -> Inputs:
    return probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users=2, candidates=4)


def _set(name: str, value: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]) -> Inputs:
    inputs = _good()
    inputs[name] = value(inputs[name])
    return inputs


def _item_out_of_range(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    array[1, 2] = SMALL_ITEMS + 5
    return array


def _negative(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    array[0, 0] = -3
    return array


def _missing_cand_dense() -> Inputs:
    inputs = _good()
    del inputs["cand_dense"]
    return inputs


BAD = {
    "sequence too short": (_set("seq_items", lambda a: a[:, :49].copy()), "seq_items"),
    "wrong dtype": (_set("cand_items", lambda a: a.astype(np.float32)), "cand_items"),
    "candidate counts differ": (_set("cand_cats", lambda a: a[:, :3].copy()), "cand_cats"),
    "dense width wrong": (_set("cand_dense", lambda a: a[:, :, :4].copy()), "cand_dense"),
    "item id out of range": (_set("cand_items", _item_out_of_range), "outside [0, 1000)"),
    "negative category": (_set("seq_cats", _negative), "seq_cats has ids outside [0, 50)"),
    "missing input": (_missing_cand_dense(), "cand_dense"),
}


@pytest.mark.parametrize("model", PYTHON_MODELS)
@pytest.mark.parametrize("case", list(BAD))
def test_bad_request_gets_a_clear_error_and_the_server_stays_up(
    client: Any, model: str, case: str
) -> None:
    inputs, expected = BAD[case]
    with pytest.raises(InferenceServerException) as raised:
        _infer_any_dtype(client, model, inputs)
    assert expected in str(raised.value)
    scores, _ = infer(client, model, _good())
    assert scores.shape == (2, 4)


@pytest.mark.parametrize("model", PYTHON_MODELS)
def test_bad_requests_in_a_batch_do_not_fail_the_good_ones(client: Any, model: str) -> None:
    bad = BAD["item id out of range"][0]
    requests = [bad if i % 4 == 0 else _good() for i in range(32)]

    def call(inputs: Inputs) -> str:
        try:
            infer(client, model, inputs)
        except InferenceServerException as error:
            return str(error)
        return "ok"

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(call, requests))
    assert outcomes.count("ok") == 24
    assert all("outside [0, 1000)" in o for o in outcomes if o != "ok")


def _infer_any_dtype(client: Any, model: str, inputs: Inputs) -> None:
    tensors = []
    for name, array in inputs.items():
        datatype = {"int32": "INT32", "float32": "FP32", "int64": "INT64"}[array.dtype.name]
        tensor = grpcclient.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    client.infer(model, tensors, client_timeout=30)
