"""The model directory, written whole or not at all.

Everything goes into a temporary sibling folder first; it replaces the target
only when complete, so serving and the worker never load a half-written model.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from jobs.ranker import network
from jobs.ranker.export import export_all
from jobs.ranker.model import DIN, DINConfig
from jobs.ranker.samples import Catalog
from schemas.ranking import (
    CATEGORIES_FILE,
    EMBEDDINGS_FILE,
    MANIFEST_FILE,
    MODEL_CONFIG_FILE,
    NETWORK_FILE,
    POPULAR_FILE,
    SEQ_LEN,
    VOCAB_FILE,
    WEIGHTS_FILE,
)

MANIFEST = MANIFEST_FILE
METRICS = "metrics.json"
POPULAR_LIMIT = 1000


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """A fresh folder that replaces ``target`` when the block succeeds (removed if not)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}.old-{staging.name.rsplit('-', 1)[-1]}")
    if target.exists():
        target.rename(old)  # rename is atomic; the gap before the next one is microseconds
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def write_model_files(
    directory: Path, model: DIN, catalog: Catalog, item_vectors: npt.NDArray[np.float32]
) -> dict[str, Path]:
    """Weights, config, the three ONNX variants and the worker's item tables; the
    embedding route searches ``item_vectors`` (``jobs.ranker.item_vectors``)."""
    write_torch_model(directory, model)
    catalog.vocab.save(directory / VOCAB_FILE)
    np.save(directory / EMBEDDINGS_FILE, item_vectors.astype(np.float32))
    np.save(directory / CATEGORIES_FILE, catalog.item_category.astype(np.int64))
    popular = catalog.popular_raw_items(POPULAR_LIMIT)
    (directory / POPULAR_FILE).write_text(json.dumps(popular))
    return export_all(model, directory)


def write_torch_model(directory: Path, model: DIN) -> None:
    """What `ranker_torch` serves: weights, hyper-parameters and the network's source.

    The source goes with the weights because the served model cannot import the
    project: a published version keeps running the network it was trained as.
    """
    torch.save(model.state_dict(), directory / WEIGHTS_FILE)
    model.config.save(directory / MODEL_CONFIG_FILE)
    shutil.copyfile(Path(network.__file__), directory / NETWORK_FILE)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def manifest(served_variant: str, served_file: str, **extra: Any) -> dict[str, Any]:
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "served_variant": served_variant,
        "served_file": served_file,
        "seq_len": SEQ_LEN,
        **extra,
    }


def read_manifest(directory: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((directory / MANIFEST).read_text())
    return loaded


def load_model(directory: Path) -> DIN:
    """The trained PyTorch model from ``model_config.json`` and ``model.pt``."""
    model = DIN(DINConfig.load(directory / MODEL_CONFIG_FILE))
    model.load_state_dict(torch.load(directory / WEIGHTS_FILE, weights_only=True))
    return model.eval()
