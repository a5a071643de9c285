"""A served model made to fail on purpose, the way a broken export fails in production.

Its scores are NaN whenever a request carries more than :data:`PROBE_SAFE_CANDIDATES`
candidates per user, and correct otherwise: the three-candidate probe that every load
runs passes (inference/serving/probe.py), and real traffic (a hundred candidates per
user) fails. Triton loads it as a normal version, so a canary of it reaches users.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from schemas.model_files import MANIFEST_FILE, served_file_path
from schemas.ranking import CAND_ITEMS, SCORES

PROBE_SAFE_CANDIDATES = 10


def nan_at_traffic_shapes(artifacts_dir: Path, out: Path) -> Path:
    """``artifacts_dir`` copied to ``out``, its served ONNX file rewired as the module says."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shutil.copytree(artifacts_dir, out)
    served = served_file_path(out, json.loads((out / MANIFEST_FILE).read_text()))
    model = onnx.load(str(served))
    graph = model.graph
    finite = f"{SCORES}_finite"
    for node in graph.node:
        node.output[:] = [finite if name == SCORES else name for name in node.output]
    graph.initializer.extend([
        numpy_helper.from_array(np.array([1], np.int64), "one_axis"),
        numpy_helper.from_array(np.array([PROBE_SAFE_CANDIDATES], np.int64), "safe"),
        helper.make_tensor("nan", TensorProto.FLOAT, [], [float("nan")]),
        helper.make_tensor("unit", TensorProto.FLOAT, [], [1.0]),
    ])  # fmt: skip
    graph.node.extend([
        helper.make_node("Shape", [CAND_ITEMS], ["cand_shape"]),
        helper.make_node("Gather", ["cand_shape", "one_axis"], ["candidates"]),
        helper.make_node("Greater", ["candidates", "safe"], ["too_many"]),
        helper.make_node("Where", ["too_many", "nan", "unit"], ["factor"]),
        helper.make_node("Mul", [finite, "factor"], [SCORES]),
    ])  # fmt: skip
    onnx.save(model, str(served))
    return out
