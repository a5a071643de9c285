"""The python-backend model's pure parts: request checks, grouping, scoring a batch."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from inference.serving.probe import probe_inputs
from tests.inference.serving.artifacts import write_serving_artifacts

MODEL_PY = (
    Path(__file__).resolve().parents[3] / "inference" / "model_repository" / "ranker_python"
) / "model.py"


def _load_model_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ranker_python_model", MODEL_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


model_py = _load_model_module()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    artifacts = write_serving_artifacts(tmp_path_factory.mktemp("artifacts"))
    return ort.InferenceSession(str(artifacts / "model.onnx"), providers=["CPUExecutionProvider"])


def test_a_valid_request_passes() -> None:
    assert model_py.validate(probe_inputs(1000, 50), 1000, 50) == ""


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("cand_items", 1000, "cand_items has ids outside [0, 1000)"),
        ("seq_items", -1, "seq_items has ids outside [0, 1000)"),
        ("cand_cats", 50, "cand_cats has ids outside [0, 50)"),
        ("seq_cats", 99, "seq_cats has ids outside [0, 50)"),
    ],
)
def test_ids_out_of_range_are_named(name: str, value: int, expected: str) -> None:
    inputs = probe_inputs(1000, 50)
    inputs[name][0, -1] = value
    assert model_py.validate(inputs, 1000, 50).startswith(expected)


def test_candidate_counts_must_agree() -> None:
    inputs = probe_inputs(1000, 50, candidates=3)
    inputs["cand_cats"] = inputs["cand_cats"][:, :2].copy()
    assert "cand_cats has shape [2, 2], expected [2, 3]" in model_py.validate(inputs, 1000, 50)


def test_a_missing_input_is_named() -> None:
    inputs = probe_inputs(1000, 50)
    del inputs["cand_dense"]
    assert model_py.validate(inputs, 1000, 50) == "missing input(s): cand_dense"


def test_requests_are_grouped_by_candidate_count() -> None:
    requests = [probe_inputs(1000, 50, candidates=c) for c in (3, 5, 3)]
    assert model_py.group_by_candidates(requests) == {3: [0, 2], 5: [1]}


def test_a_mixed_batch_scores_as_each_request_alone(session: Any) -> None:
    requests = [
        probe_inputs(1000, 50, users=u, candidates=c) for u, c in ((1, 1), (3, 200), (2, 1))
    ]
    batched = model_py.score_requests(session, requests)
    for inputs, scores in zip(requests, batched, strict=True):
        (alone,) = session.run(["scores"], inputs)
        assert scores.shape == alone.shape
        assert scores.flags.c_contiguous
        np.testing.assert_allclose(scores, alone, atol=1e-6)


def test_the_served_model_agrees_with_the_ranking_contract() -> None:
    """Triton's stub cannot import the project, so model.py restates the contract's sizes."""
    from schemas import ranking

    assert model_py.SEQ_LEN == ranking.SEQ_LEN
    assert len(ranking.USER_DENSE_FEATURES) == model_py.USER_DENSE_SIZE
    assert len(ranking.ITEM_DENSE_FEATURES) == model_py.ITEM_DENSE_SIZE
    assert model_py.INPUT_NAMES == ranking.INPUT_NAMES
    assert model_py.OUTPUT_NAME == ranking.SCORES
