"""What every python-backend ranker does with a batch of requests, before and after its model.

One source for `ranker_python` and `ranker_torch`: `python -m inference.serving
publish` copies this file into each python model's version folder, beside its
model.py, which loads it by path (Triton's stub sees neither PYTHONPATH nor the
project). It needs only numpy.

A batch from the dynamic batcher holds several requests. Each is checked on its
own: a bad one gets its own error message, the rest are scored. Valid requests
with the same candidate count are concatenated and scored in one model run; a
failed run answers its requests with an error and leaves the instance serving.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

# The stub cannot import schemas.ranking: these restate it, and a test keeps them equal.
SEQ_LEN = 50
USER_DENSE_SIZE = 4
ITEM_DENSE_SIZE = 24
ID_INPUTS = ("seq_items", "seq_cats", "cand_items", "cand_cats")
INPUT_NAMES = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")
OUTPUT_NAME = "scores"

Inputs = dict[str, npt.NDArray[Any]]
Scores = npt.NDArray[np.float32]
# Scores [users, candidates] of every request of one group (same candidate count), in order.
GroupScorer = Callable[[Sequence[Inputs]], list[Scores]]


def load_module(path: Path, name: str) -> ModuleType:
    """The Python file at `path` as a module (registered, as dataclasses need)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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
    """Request positions by candidate count: each group is one model run."""
    groups: dict[int, list[int]] = {}
    for position, inputs in enumerate(requests):
        groups.setdefault(int(inputs["cand_items"].shape[1]), []).append(position)
    return groups


def concatenate(requests: Sequence[Inputs]) -> Inputs:
    if len(requests) == 1:
        return dict(requests[0])
    return {name: np.concatenate([r[name] for r in requests]) for name in INPUT_NAMES}


def split_rows(scores: Scores, sizes: Sequence[int]) -> list[Scores]:
    """Per-request score blocks, each contiguous (DLPack export needs that)."""
    bounds = np.cumsum(sizes)[:-1]
    return [np.ascontiguousarray(block) for block in np.split(scores, bounds)]


def score_groups(requests: Sequence[Inputs], run: Callable[[Inputs], Scores]) -> list[Scores]:
    """Scores for every (already valid) request: one `run` per candidate count, split back."""
    results: list[Scores] = [np.empty((0, 0), np.float32)] * len(requests)
    for positions in group_by_candidates(requests).values():
        group = [requests[p] for p in positions]
        scores = run(concatenate(group))
        sizes = [r["cand_items"].shape[0] for r in group]
        for position, block in zip(positions, split_rows(scores, sizes), strict=True):
            results[position] = block
    return results


def answer(
    requests: Sequence[Mapping[str, npt.NDArray[Any]]],
    limits: tuple[int, int],
    run: Callable[[Inputs], Scores],
) -> list[Scores | str]:
    """Per request, its scores or the error message it gets; never raises."""
    errors = [validate(inputs, *limits) for inputs in requests]
    valid = [dict(inputs) for inputs, error in zip(requests, errors, strict=True) if not error]
    try:
        scores = iter(score_groups(valid, run))
    except Exception as failure:  # one failed run must not take the instance down
        failed = f"scoring failed: {type(failure).__name__}: {failure}"
        return [error or failed for error in errors]
    return [error or next(scores) for error in errors]


def responses(outcomes: Sequence[Scores | str], pb_utils: Any) -> list[Any]:
    """Triton responses: scores as the `scores` output (DLPack), a message as an error."""
    return [
        pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(outcome))
        if isinstance(outcome, str)
        else pb_utils.InferenceResponse([dlpack_output(outcome, pb_utils)])
        for outcome in outcomes
    ]


# The stub marks a DLPack capsule it consumed "used_dlpack", where the DLPack protocol
# (and numpy's capsule destructor) says "used_dltensor": numpy then takes the capsule
# for unconsumed, fails to read it, and prints a traceback per response (thousands an
# hour, each in the response's time). Renamed after the stub took it, the capsule is
# released quietly; the stub frees the tensor itself.
_CONSUMED = ctypes.c_char_p(b"used_dltensor")  # module-level: capsules keep the pointer
_set_capsule_name = ctypes.pythonapi.PyCapsule_SetName
_set_capsule_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_set_capsule_name.restype = ctypes.c_int


def dlpack_output(scores: Any, pb_utils: Any) -> Any:
    """The `scores` output tensor from a CPU array (numpy or torch) without a copy."""
    capsule = scores.__dlpack__()
    tensor = pb_utils.Tensor.from_dlpack(OUTPUT_NAME, capsule)
    _set_capsule_name(capsule, _CONSUMED)
    return tensor
