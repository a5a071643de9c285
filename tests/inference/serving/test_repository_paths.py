"""Publishing refuses a manifest whose served file lies outside the artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference.serving import repository
from inference.serving.errors import PublishError


@pytest.mark.parametrize("served", ["../secret.onnx", "/etc/hostname", "escape.onnx"])
def test_a_served_file_outside_the_artifacts_is_refused(tmp_path: Path, served: str) -> None:
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (tmp_path / "secret.onnx").write_bytes(b"not the model")
    (folder / "escape.onnx").symlink_to(tmp_path / "secret.onnx")
    (folder / "manifest.json").write_text(json.dumps({"served_file": served}))
    with pytest.raises(PublishError, match="served_file"):
        repository.served_file(folder)
    with pytest.raises(PublishError):
        repository.publish(folder, tmp_path / "repo", models=("ranker",))
    assert not list((tmp_path / "repo").glob("*/[0-9]*"))
