"""ONNX export of the DIN ranker, plus a small untrained model for tests elsewhere.

The exported graph takes the contract's inputs (int32 ids, fp32 dense features)
with dynamic batch (users) and candidate axes, and returns ``scores`` [B,C].
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import torch

from jobs.ranker.model import DIN, DINConfig
from schemas.ranking import (
    CAND_CATS,
    CAND_DENSE,
    CAND_ITEMS,
    CANDIDATE_FEATURES,
    INPUT_NAMES,
    SCORES,
    SEQ_CATS,
    SEQ_ITEMS,
    SEQ_LEN,
    USER_DENSE,
    USER_DENSE_FEATURES,
    Float32Array,
    Int32Array,
)

OPSET = 17

_DYNAMIC_AXES = {
    SEQ_ITEMS: {0: "batch"},
    SEQ_CATS: {0: "batch"},
    USER_DENSE: {0: "batch"},
    CAND_ITEMS: {0: "batch", 1: "candidates"},
    CAND_CATS: {0: "batch", 1: "candidates"},
    CAND_DENSE: {0: "batch", 1: "candidates"},
    SCORES: {0: "batch", 1: "candidates"},
}


# One request's inputs by contract name.
ModelInputs = dict[str, Int32Array | Float32Array]


def example_inputs(
    config: DINConfig, batch: int = 2, candidates: int = 3, seed: int = 0
) -> ModelInputs:
    """Random, valid contract inputs for ``config`` (ids in range, some padding)."""
    rng = np.random.default_rng(seed)
    seq_items = rng.integers(0, config.num_items, (batch, SEQ_LEN), dtype=np.int32)
    seq_items[:, : SEQ_LEN // 3] = 0  # left padding, as a short history has
    return {
        SEQ_ITEMS: seq_items,
        SEQ_CATS: rng.integers(0, config.num_categories, (batch, SEQ_LEN), dtype=np.int32),
        USER_DENSE: rng.random((batch, len(USER_DENSE_FEATURES)), dtype=np.float32),
        CAND_ITEMS: rng.integers(1, config.num_items, (batch, candidates), dtype=np.int32),
        CAND_CATS: rng.integers(1, config.num_categories, (batch, candidates), dtype=np.int32),
        CAND_DENSE: rng.random((batch, candidates, len(CANDIDATE_FEATURES)), dtype=np.float32),
    }


def export_onnx(model: DIN, path: Path, opset: int = OPSET) -> Path:
    """Write ``model`` to ``path`` as fp32 ONNX with dynamic batch and candidate axes."""
    model = model.eval()
    inputs = example_inputs(model.config)
    args = tuple(torch.from_numpy(inputs[name]) for name in INPUT_NAMES)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # The TorchScript exporter warns that it is deprecated; it is the one that
        # needs no extra packages and gives a plain graph ORT runs as is.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=list(INPUT_NAMES),
            output_names=[SCORES],
            dynamic_axes=_DYNAMIC_AXES,
            opset_version=opset,
            dynamo=False,
        )
    return path


def random_model(
    num_items: int = 1000, num_categories: int = 50, seed: int = 0, dim: int = 32
) -> DIN:
    """An untrained DIN with fixed weights for ``seed``: for serving and worker tests."""
    torch.manual_seed(seed)
    return DIN(DINConfig(num_items=num_items, num_categories=num_categories, dim=dim)).eval()


# The head's first layer reads embeddings (~0.1) beside log counts (up to ~8) in
# one tensor: one per-tensor activation scale rounds the embeddings away
# (scores off by up to 0.4 measured), so that layer stays fp32.
_FP32_NODE_PREFIXES = ("/head/head.0/",)


def _int8_excluded_nodes(fp32_path: Path) -> list[str]:
    import onnx

    graph = onnx.load(str(fp32_path)).graph
    return [node.name for node in graph.node if node.name.startswith(_FP32_NODE_PREFIXES)]


def quantize_int8(fp32_path: Path, int8_path: Path) -> Path:
    """Dynamic INT8 quantization of the weight GEMMs (activations quantized per call)."""
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # it advises pre-processing on every call, via the root logger
    try:
        quantize_dynamic(
            str(fp32_path),
            str(int8_path),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            # Only weight GEMMs: an activation x activation product loses too much
            # when both sides are quantized per call.
            extra_options={"MatMulConstBOnly": True},
            nodes_to_exclude=_int8_excluded_nodes(fp32_path),
        )
    finally:
        root.setLevel(level)
    return int8_path


def convert_fp16(fp32_path: Path, fp16_path: Path) -> Path:
    """FP16 weights and compute; inputs and outputs keep the contract's int32/fp32 types."""
    import onnx
    from onnxruntime.transformers.float16 import (  # type: ignore[import-untyped]
        convert_float_to_float16,
    )

    model = onnx.load(str(fp32_path))
    converted = convert_float_to_float16(model, keep_io_types=True)
    onnx.save(converted, str(fp16_path))
    return fp16_path


def export_all(model: DIN, directory: Path) -> dict[str, Path]:
    """``model.onnx``, ``model.int8.onnx`` and ``model.fp16.onnx`` in ``directory``."""
    fp32 = export_onnx(model, directory / "model.onnx")
    return {
        "fp32": fp32,
        "int8": quantize_int8(fp32, directory / "model.int8.onnx"),
        "fp16": convert_fp16(fp32, directory / "model.fp16.onnx"),
    }
