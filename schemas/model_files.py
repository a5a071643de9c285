"""The file names of a ranker artifacts directory, which training writes and serving reads.

Standard library only (unlike ``schemas.ranking``, which re-exports these): the GPU
serving benchmark publishes on a host that has torch and numpy but not the
project's other dependencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

MANIFEST_FILE = "manifest.json"
VOCAB_FILE = "vocab.npz"
EMBEDDINGS_FILE = "item_embeddings.npy"
CATEGORIES_FILE = "item_categories.npy"
POPULAR_FILE = "popular_items.json"
# The PyTorch model as `ranker_torch` serves it: weights, hyper-parameters, and the
# network's source (a torch-only module), so a version runs the code it was trained with.
WEIGHTS_FILE = "model.pt"
MODEL_CONFIG_FILE = "model_config.json"
NETWORK_FILE = "network.py"
# The drift job's reference distribution, saved beside the model it describes.
DRIFT_REFERENCE_FILE = "drift_reference.parquet"
# What manifest.json names as served when it names nothing.
DEFAULT_SERVED_FILE = "model.onnx"


class ModelPathError(ValueError):
    """A file name from an artifacts directory that would lead outside it."""


def confined(model_dir: Path, name: str) -> Path:
    """``model_dir / name`` resolved, refused unless it stays inside ``model_dir``.

    ``name`` comes from manifest.json, which travels with the model: an absolute
    path, a ``..`` or a symlink pointing out would make serving read (and publish to
    Triton) any file the process can see.
    """
    relative = PurePath(name)
    if not name or relative.is_absolute() or ".." in relative.parts:
        raise ModelPathError(f"{name!r} is not a file name inside the model directory")
    root = model_dir.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise ModelPathError(f"{name!r} leads outside {root} (a symlink pointing out)")
    return path


def served_file_path(model_dir: Path, manifest: Mapping[str, Any]) -> Path:
    """The file ``manifest`` names as served (``served_file``), confined to ``model_dir``."""
    return confined(model_dir, str(manifest.get("served_file", DEFAULT_SERVED_FILE)))
