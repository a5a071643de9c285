"""Small ranker artifacts directories for serving tests (an untrained DIN, real ONNX export)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from jobs.ranker.artifacts import write_torch_model
from jobs.ranker.export import export_onnx, random_model

SMALL_ITEMS = 1000
SMALL_CATEGORIES = 50


def write_serving_artifacts(
    directory: Path,
    num_items: int = SMALL_ITEMS,
    num_categories: int = SMALL_CATEGORIES,
    seed: int = 0,
    dim: int = 32,
) -> Path:
    """model.onnx, the PyTorch model (model.pt, model_config.json, network.py) and
    manifest.json: what publishing every model needs."""
    model = random_model(num_items=num_items, num_categories=num_categories, seed=seed, dim=dim)
    directory.mkdir(parents=True, exist_ok=True)
    export_onnx(model, directory / "model.onnx")
    write_torch_model(directory, model)
    manifest = {"served_variant": "fp32", "served_file": "model.onnx", "seq_len": 50, "seed": seed}
    (directory / "manifest.json").write_text(json.dumps(manifest) + "\n")
    return directory


def load_published_model(version_dir: Path, name: str) -> ModuleType:
    """A published version's model.py, imported from its folder as Triton's stub does."""
    spec = importlib.util.spec_from_file_location(name, version_dir / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
