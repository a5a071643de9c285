"""Small ranker artifacts directories for serving tests (an untrained DIN, real ONNX export)."""

from __future__ import annotations

import json
from pathlib import Path

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
    """model.onnx, model_config.json and manifest.json: what publishing needs."""
    model = random_model(num_items=num_items, num_categories=num_categories, seed=seed, dim=dim)
    directory.mkdir(parents=True, exist_ok=True)
    export_onnx(model, directory / "model.onnx")
    model.config.save(directory / "model_config.json")
    manifest = {"served_variant": "fp32", "served_file": "model.onnx", "seq_len": 50, "seed": seed}
    (directory / "manifest.json").write_text(json.dumps(manifest) + "\n")
    return directory
