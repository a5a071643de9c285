"""File names from manifest.json stay inside the model directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.model_files import ModelPathError, confined, served_file_path


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "ranker"
    (folder / "variants").mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"onnx")
    (folder / "variants" / "int8.onnx").write_bytes(b"int8")
    (tmp_path / "outside.onnx").write_bytes(b"not the model")
    return folder


def test_names_inside_resolve_to_their_file(model_dir: Path) -> None:
    assert served_file_path(model_dir, {}) == (model_dir / "model.onnx").resolve()
    inner = served_file_path(model_dir, {"served_file": "variants/int8.onnx"})
    assert inner == (model_dir / "variants" / "int8.onnx").resolve()


@pytest.mark.parametrize(
    "name", ["../outside.onnx", "variants/../../outside.onnx", "/etc/passwd", ""]
)
def test_absolute_and_parent_names_are_refused(model_dir: Path, name: str) -> None:
    with pytest.raises(ModelPathError):
        served_file_path(model_dir, {"served_file": name})


def test_a_symlink_pointing_out_is_refused(model_dir: Path) -> None:
    (model_dir / "model.int8.onnx").symlink_to(model_dir.parent / "outside.onnx")
    (model_dir / "linked").symlink_to(model_dir.parent)
    with pytest.raises(ModelPathError, match="outside"):
        confined(model_dir, "model.int8.onnx")
    with pytest.raises(ModelPathError):
        confined(model_dir, "linked/outside.onnx")


def test_a_symlink_staying_inside_is_fine(model_dir: Path) -> None:
    (model_dir / "served.onnx").symlink_to(model_dir / "variants" / "int8.onnx")
    assert confined(model_dir, "served.onnx") == (model_dir / "variants" / "int8.onnx").resolve()
