"""gRPC calls to the served ranker, as the worker makes them."""

from __future__ import annotations

from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

from schemas.ranking import SCORES

_DATATYPES = {np.dtype(np.int32): "INT32", np.dtype(np.float32): "FP32"}


def infer(
    client: grpcclient.InferenceServerClient,
    model: str,
    inputs: dict[str, np.ndarray[Any, Any]],
    version: str = "",
) -> tuple[np.ndarray[Any, Any], str]:
    """(scores, model_version that answered) for one request."""
    tensors = []
    for name, array in inputs.items():
        tensor = grpcclient.InferInput(name, list(array.shape), _DATATYPES[array.dtype])
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    result = client.infer(model, tensors, model_version=version, client_timeout=30)
    scores = result.as_numpy(SCORES)
    assert scores is not None
    return scores, str(result.get_response().model_version)
