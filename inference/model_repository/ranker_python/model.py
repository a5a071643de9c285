"""Triton python-backend model: the ranker's ONNX file run by ONNX Runtime.

This file is the one source; `python -m inference.serving publish` copies it into
every version folder, so a version keeps the code it was published with and a
rollback brings back both. It imports nothing from the project: Triton's stub runs
it from the version folder.

Tensors cross the stub through DLPack only. The stub in the nvidia-pytriton wheel
was built against numpy 1, and with numpy 2 installed ``as_numpy()`` and
``pb_utils.Tensor(name, ndarray)`` silently return zeros; ``np.from_dlpack`` and
``pb_utils.Tensor.from_dlpack`` are exact.

A batch from the dynamic batcher holds several requests. Each is checked on its
own (a bad one gets its own error response, the rest are scored); valid requests
with the same candidate count are concatenated and scored in one ONNX Runtime run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

try:
    import triton_python_backend_utils as pb_utils  # type: ignore[import-not-found]
except ImportError:  # imported outside Triton: unit tests use the pure functions below
    pb_utils = None

# The stub cannot import schemas.ranking: these restate it, and a test keeps them equal.
SEQ_LEN = 50
USER_DENSE_SIZE = 4
ITEM_DENSE_SIZE = 5
ID_INPUTS = ("seq_items", "seq_cats", "cand_items", "cand_cats")
INPUT_NAMES = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")
OUTPUT_NAME = "scores"

Inputs = dict[str, npt.NDArray[Any]]


def expected_shapes(users: int, candidates: int) -> dict[str, tuple[int, ...]]:
    return {
        "seq_items": (users, SEQ_LEN),
        "seq_cats": (users, SEQ_LEN),
        "user_dense": (users, USER_DENSE_SIZE),
        "cand_items": (users, candidates),
        "cand_cats": (users, candidates),
        "cand_dense": (users, candidates, ITEM_DENSE_SIZE),
    }


def validate(inputs: Mapping[str, npt.NDArray[Any]], num_items: int, num_categories: int) -> str:
    """ "" if the request can be scored, else a message saying what is wrong with it."""
    missing = [name for name in INPUT_NAMES if name not in inputs]
    if missing:
        return f"missing input(s): {', '.join(missing)}"
    items = inputs["cand_items"]
    if items.ndim != 2:
        return f"cand_items must be [users, candidates], got shape {list(items.shape)}"
    want = expected_shapes(items.shape[0], items.shape[1])
    for name, shape in want.items():
        if inputs[name].shape != shape:
            return (
                f"{name} has shape {list(inputs[name].shape)}, expected {list(shape)} "
                f"(users={items.shape[0]}, candidates={items.shape[1]} from cand_items)"
            )
    for name in ID_INPUTS:
        limit = num_items if name.endswith("items") else num_categories
        values = inputs[name]
        if values.size and (values.min() < 0 or values.max() >= limit):
            bad = values[(values < 0) | (values >= limit)]
            return f"{name} has ids outside [0, {limit}): e.g. {bad[:5].tolist()}"
    return ""


def group_by_candidates(requests: Sequence[Inputs]) -> dict[int, list[int]]:
    """Request positions by candidate count: each group is one ONNX Runtime run."""
    groups: dict[int, list[int]] = {}
    for position, inputs in enumerate(requests):
        groups.setdefault(int(inputs["cand_items"].shape[1]), []).append(position)
    return groups


def concatenate(requests: Sequence[Inputs]) -> Inputs:
    if len(requests) == 1:
        return dict(requests[0])
    return {name: np.concatenate([r[name] for r in requests]) for name in INPUT_NAMES}


def split_rows(
    scores: npt.NDArray[np.float32], sizes: Sequence[int]
) -> list[npt.NDArray[np.float32]]:
    """Per-request score blocks, each contiguous (DLPack export needs that)."""
    bounds = np.cumsum(sizes)[:-1]
    return [np.ascontiguousarray(block) for block in np.split(scores, bounds)]


def score_requests(session: Any, requests: Sequence[Inputs]) -> list[npt.NDArray[np.float32]]:
    """Scores [users, candidates] for every (already validated) request, in order."""
    results: list[npt.NDArray[np.float32]] = [np.empty((0, 0), np.float32)] * len(requests)
    for positions in group_by_candidates(requests).values():
        group = [requests[p] for p in positions]
        (scores,) = session.run([OUTPUT_NAME], concatenate(group))
        sizes = [r["cand_items"].shape[0] for r in group]
        for position, block in zip(positions, split_rows(scores, sizes), strict=True):
            results[position] = block
    return results


def read_limits(version_dir: Path) -> tuple[int, int]:
    """(num_items, num_categories) from the model_config.json published beside the model."""
    config = json.loads((version_dir / "model_config.json").read_text())
    return int(config["num_items"]), int(config["num_categories"])


class TritonPythonModel:
    """The class name and methods Triton's python backend looks for."""

    def initialize(self, args: dict[str, str]) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]

        version_dir = Path(args["model_repository"]) / args["model_version"]
        self.num_items, self.num_categories = read_limits(version_dir)
        parameters = json.loads(args["model_config"]).get("parameters", {})
        threads = int(parameters.get("intra_op_threads", {}).get("string_value", "0"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0 = one per core
        # Idle pool threads spin by default; on a small CPU shared with the callers that
        # spinning takes the cores the next request needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(version_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )

    def execute(self, requests: list[Any]) -> list[Any]:
        parsed: list[Inputs | None] = []
        errors: list[str] = []
        for request in requests:
            inputs = {
                name: np.from_dlpack(tensor)
                for name in INPUT_NAMES
                if (tensor := pb_utils.get_input_tensor_by_name(request, name)) is not None
            }
            error = validate(inputs, self.num_items, self.num_categories)
            parsed.append(None if error else inputs)
            errors.append(error)
        valid = [inputs for inputs in parsed if inputs is not None]
        try:
            scores = iter(score_requests(self.session, valid))
        except Exception as error:  # one failed run must not take the instance down
            return [_error_response(f"scoring failed: {error}") for _ in requests]
        return [
            _error_response(error)
            if inputs is None
            else pb_utils.InferenceResponse(
                [pb_utils.Tensor.from_dlpack(OUTPUT_NAME, next(scores))]
            )
            for inputs, error in zip(parsed, errors, strict=True)
        ]

    def finalize(self) -> None:
        self.session = None


def _error_response(message: str) -> Any:
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
