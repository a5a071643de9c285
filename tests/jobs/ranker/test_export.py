"""The exported ONNX graphs score like the PyTorch model, on the contract's types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import torch

from jobs.ranker.export import ModelInputs, example_inputs, export_all, random_model
from jobs.ranker.model import DIN
from schemas.ranking import INPUT_NAMES, SCORES, SEQ_ITEMS, Float32Array


def _torch_scores(model: DIN, inputs: ModelInputs) -> Float32Array:
    with torch.no_grad():
        scores = model(*(torch.from_numpy(inputs[name]) for name in INPUT_NAMES))
    return np.asarray(scores.numpy(), dtype=np.float32)


def _onnx_scores(path: Path, inputs: ModelInputs) -> Float32Array:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (scores,) = session.run([SCORES], inputs)
    return np.asarray(scores, dtype=np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[DIN, dict[str, Path]]:
    model = random_model(num_items=300, num_categories=20, seed=7)
    return model, export_all(model, tmp_path_factory.mktemp("onnx"))


@pytest.mark.parametrize(("batch", "candidates"), [(1, 1), (3, 64), (2, 500)])
def test_fp32_onnx_matches_torch_for_any_batch_and_candidate_count(
    exported: tuple[DIN, dict[str, Path]], batch: int, candidates: int
) -> None:
    model, paths = exported
    inputs = example_inputs(model.config, batch, candidates, seed=batch + candidates)
    np.testing.assert_allclose(
        _onnx_scores(paths["fp32"], inputs), _torch_scores(model, inputs), atol=1e-4
    )


@pytest.mark.parametrize(("variant", "tolerance"), [("int8", 5e-3), ("fp16", 2e-3)])
def test_lightened_variants_score_close_to_fp32(
    exported: tuple[DIN, dict[str, Path]], variant: str, tolerance: float
) -> None:
    model, paths = exported
    inputs = example_inputs(model.config, 4, 100, seed=11)
    scores = _onnx_scores(paths[variant], inputs)
    np.testing.assert_allclose(scores, _torch_scores(model, inputs), atol=tolerance)


def test_graph_inputs_are_int32_ids_and_fp32_dense_with_dynamic_axes(
    exported: tuple[DIN, dict[str, Path]],
) -> None:
    _, paths = exported
    for path in paths.values():
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        types = {node.name: node.type for node in session.get_inputs()}
        assert types[SEQ_ITEMS] == "tensor(int32)"
        assert types["cand_dense"] == "tensor(float)"
        assert session.get_outputs()[0].type == "tensor(float)"
        assert session.get_outputs()[0].shape == ["batch", "candidates"]


def test_empty_history_gives_finite_scores(exported: tuple[DIN, dict[str, Path]]) -> None:
    model, paths = exported
    inputs = example_inputs(model.config, 2, 10, seed=3)
    inputs[SEQ_ITEMS][:] = 0
    for path in paths.values():
        assert np.isfinite(_onnx_scores(path, inputs)).all()


def test_training_and_inference_paths_compute_the_same_scores() -> None:
    model = random_model(num_items=200, num_categories=10, seed=5)
    inputs = example_inputs(model.config, 3, 7, seed=2)
    tensors = [torch.from_numpy(inputs[name]) for name in INPUT_NAMES]
    with torch.no_grad():
        inference = model.eval()(*tensors)
        training = model.train()(*tensors)
    model.eval()
    torch.testing.assert_close(training, inference, atol=1e-5, rtol=1e-5)


def test_model_moves_between_dtypes_like_any_module() -> None:
    model = random_model(num_items=50, num_categories=5, seed=1).to(torch.float64)
    inputs = example_inputs(model.config, 2, 3)
    tensors = [torch.from_numpy(inputs[name]) for name in INPUT_NAMES]
    tensors = [t.double() if t.is_floating_point() else t for t in tensors]
    with torch.no_grad():
        assert model(*tensors).dtype == torch.float64
