"""A probe request a freshly loaded version must answer before it takes traffic."""

from __future__ import annotations

from typing import Any

import numpy as np

from schemas.ranking import (
    CAND_CATS,
    CAND_DENSE,
    CAND_ITEMS,
    CANDIDATE_FEATURES,
    OOV_INDEX,
    SEQ_CATS,
    SEQ_ITEMS,
    SEQ_LEN,
    USER_DENSE,
    USER_DENSE_FEATURES,
)

_DATATYPES = {np.dtype(np.int32): "INT32", np.dtype(np.float32): "FP32"}


def probe_inputs(
    num_items: int, num_categories: int, users: int = 2, candidates: int = 3
) -> dict[str, np.ndarray[Any, Any]]:
    """Valid contract inputs for any vocabulary: real ids spread over it, some padding."""
    rng = np.random.default_rng(7)
    seq_items = rng.integers(OOV_INDEX, num_items, (users, SEQ_LEN), dtype=np.int32)
    seq_items[:, : SEQ_LEN // 2] = 0
    return {
        SEQ_ITEMS: seq_items,
        SEQ_CATS: rng.integers(OOV_INDEX, num_categories, (users, SEQ_LEN), dtype=np.int32),
        USER_DENSE: rng.random((users, len(USER_DENSE_FEATURES)), dtype=np.float32),
        CAND_ITEMS: rng.integers(OOV_INDEX, num_items, (users, candidates), dtype=np.int32),
        CAND_CATS: rng.integers(OOV_INDEX, num_categories, (users, candidates), dtype=np.int32),
        CAND_DENSE: rng.random((users, candidates, len(CANDIDATE_FEATURES)), dtype=np.float32),
    }


def check_scores(scores: np.ndarray[Any, Any], inputs: dict[str, np.ndarray[Any, Any]]) -> str:
    """ "" if `scores` look like click probabilities for `inputs`, else what is wrong."""
    want = inputs[CAND_ITEMS].shape
    if scores.shape != want:
        return f"scores have shape {list(scores.shape)}, expected {list(want)}"
    if not np.all(np.isfinite(scores)) or scores.min() < 0 or scores.max() > 1:
        return f"scores are not probabilities: {scores.ravel()[:6].tolist()}"
    return ""


def json_input(name: str, array: np.ndarray[Any, Any]) -> dict[str, Any]:
    """One input of Triton's JSON inference request."""
    return {
        "name": name,
        "shape": list(array.shape),
        "datatype": _DATATYPES[array.dtype],
        "data": array.ravel().tolist(),
    }
