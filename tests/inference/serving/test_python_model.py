"""The python-backend models' shared request handling and ranker_python's scoring, as published."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from inference.serving.probe import probe_inputs
from inference.serving.settings import TEMPLATE_REPOSITORY
from tests.inference.serving.artifacts import load_published_model


@pytest.fixture(scope="module")
def model_py(published: Path) -> ModuleType:
    return load_published_model(published / "ranker_python" / "1", "ranker_python_model")


@pytest.fixture(scope="module")
def handling(model_py: ModuleType) -> Any:
    """request_handling.py as the published model loaded it, from its own folder."""
    return model_py.handling


@pytest.fixture(scope="module")
def session(published: Path) -> Any:
    path = published / "ranker_python" / "1" / "model.onnx"
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_every_python_model_carries_the_one_request_handling(published: Path) -> None:
    source = (TEMPLATE_REPOSITORY / "request_handling.py").read_bytes()
    for model in ("ranker_python", "ranker_torch"):
        assert (published / model / "1" / "request_handling.py").read_bytes() == source


def test_a_valid_request_passes(handling: Any) -> None:
    assert handling.validate(probe_inputs(1000, 50), 1000, 50) == ""


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("cand_items", 1000, "cand_items has ids outside [0, 1000)"),
        ("seq_items", -1, "seq_items has ids outside [0, 1000)"),
        ("cand_cats", 50, "cand_cats has ids outside [0, 50)"),
        ("seq_cats", 99, "seq_cats has ids outside [0, 50)"),
    ],
)
def test_ids_out_of_range_are_named(handling: Any, name: str, value: int, expected: str) -> None:
    inputs = probe_inputs(1000, 50)
    inputs[name][0, -1] = value
    assert handling.validate(inputs, 1000, 50).startswith(expected)


def test_candidate_counts_must_agree(handling: Any) -> None:
    inputs = probe_inputs(1000, 50, candidates=3)
    inputs["cand_cats"] = inputs["cand_cats"][:, :2].copy()
    assert "cand_cats has shape [2, 2], expected [2, 3]" in handling.validate(inputs, 1000, 50)


def test_a_missing_input_is_named(handling: Any) -> None:
    inputs = probe_inputs(1000, 50)
    del inputs["cand_dense"]
    assert handling.validate(inputs, 1000, 50) == "missing input(s): cand_dense"


def test_requests_are_grouped_by_candidate_count(handling: Any) -> None:
    requests = [probe_inputs(1000, 50, candidates=c) for c in (3, 5, 3)]
    assert handling.group_by_candidates(requests) == {3: [0, 2], 5: [1]}


def test_a_mixed_batch_scores_as_each_request_alone(
    model_py: ModuleType, handling: Any, session: Any
) -> None:
    requests = [
        probe_inputs(1000, 50, users=u, candidates=c) for u, c in ((1, 1), (3, 200), (2, 1))
    ]
    batched = handling.score_groups(requests, model_py.onnx_runner(session))
    for inputs, scores in zip(requests, batched, strict=True):
        (alone,) = session.run(["scores"], inputs)
        assert scores.shape == alone.shape
        assert scores.flags.c_contiguous
        np.testing.assert_allclose(scores, alone, atol=1e-6)


def test_a_bad_request_gets_its_error_and_the_rest_are_scored(
    model_py: ModuleType, handling: Any, session: Any
) -> None:
    bad = probe_inputs(1000, 50)
    bad["cand_items"][0, 0] = 5000
    good = probe_inputs(1000, 50, users=1, candidates=7)
    outcomes = handling.answer([good, bad, good], (1000, 50), model_py.onnx_runner(session))
    assert outcomes[1].startswith("cand_items has ids outside [0, 1000)")
    for outcome in (outcomes[0], outcomes[2]):
        np.testing.assert_allclose(outcome, session.run(["scores"], good)[0], atol=1e-6)


def test_a_failed_run_answers_every_request_with_an_error(handling: Any) -> None:
    def broken(inputs: Any) -> Any:
        raise RuntimeError("device lost")

    bad = probe_inputs(1000, 50)
    bad["seq_cats"][0, 0] = -1
    outcomes = handling.answer([probe_inputs(1000, 50), bad], (1000, 50), broken)
    assert outcomes[0] == "scoring failed: RuntimeError: device lost"
    assert outcomes[1].startswith("seq_cats has ids outside")


def test_the_served_models_agree_with_the_ranking_contract(handling: Any) -> None:
    """Triton's stub cannot import the project, so request_handling.py restates the contract."""
    from schemas import ranking

    assert handling.SEQ_LEN == ranking.SEQ_LEN
    assert len(ranking.USER_DENSE_FEATURES) == handling.USER_DENSE_SIZE
    assert len(ranking.CANDIDATE_FEATURES) == handling.ITEM_DENSE_SIZE
    assert handling.INPUT_NAMES == ranking.INPUT_NAMES
    assert handling.OUTPUT_NAME == ranking.SCORES
