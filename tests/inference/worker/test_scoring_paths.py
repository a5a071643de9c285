"""The in-process scorer loads only a served file inside the model directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference.worker.errors import ArtifactsError
from inference.worker.scoring import OnnxScorer


@pytest.mark.parametrize("served", ["../outside.onnx", "/tmp/outside.onnx", "link.onnx"])
def test_a_served_file_outside_the_model_directory_is_refused(tmp_path: Path, served: str) -> None:
    model_dir = tmp_path / "ranker"
    model_dir.mkdir()
    (tmp_path / "outside.onnx").write_bytes(b"not the model")
    (model_dir / "link.onnx").symlink_to(tmp_path / "outside.onnx")
    (model_dir / "manifest.json").write_text(json.dumps({"served_file": served}))
    with pytest.raises(ArtifactsError, match="served_file"):
        OnnxScorer(model_dir)
