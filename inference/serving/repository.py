"""The model repository on disk: numbered versions, publishing one, pinning which are served.

Publishing copies an artifacts directory into the next version number of every
model, the same number in each, so `ranker` (ONNX Runtime backend),
`ranker_python` (python backend, ONNX Runtime) and `ranker_torch` (python backend,
PyTorch) version N are the same weights. The ONNX models take the served ONNX file
(named in manifest.json); `ranker_torch` takes the PyTorch weights and the
network's source. A version folder is built under a hidden name and renamed into
place, so Triton never sees half a version.

Publishing needs only the standard library (the GPU serving benchmark publishes on
a host without tritonclient); reading and pinning config.pbtxt need protobuf.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inference.serving.errors import PublishError
from inference.serving.settings import MODELS, TEMPLATE_REPOSITORY
from runtime.files import file_lock
from schemas.model_files import MANIFEST_FILE as MANIFEST
from schemas.model_files import (
    MODEL_CONFIG_FILE,
    NETWORK_FILE,
    WEIGHTS_FILE,
    ModelPathError,
    served_file_path,
)

CONFIG = "config.pbtxt"
PYTHON_MODEL = "model.py"
# Beside every python model's model.py: the request checks and batching they share.
SHARED_PYTHON_FILES = ("request_handling.py",)
# Stands for the served ONNX file (manifest.json names it), copied as model.onnx.
SERVED_ONNX = "model.onnx"
# The artifacts files each model's version folder takes, besides manifest.json.
ARTIFACT_FILES: dict[str, tuple[str, ...]] = {
    "ranker": (SERVED_ONNX,),
    # The id checks read the vocabulary sizes from model_config.json.
    "ranker_python": (SERVED_ONNX, MODEL_CONFIG_FILE),
    "ranker_torch": (WEIGHTS_FILE, MODEL_CONFIG_FILE, NETWORK_FILE),
}


def versions(model_dir: Path) -> list[int]:
    """The numbered version folders of one model, ascending ([] if none)."""
    if not model_dir.is_dir():
        return []
    return sorted(int(p.name) for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit())


def publish(
    artifacts_dir: Path,
    repository: Path,
    models: Sequence[str] = MODELS,
    template: Path = TEMPLATE_REPOSITORY,
    allow_worse: bool = False,
) -> int:
    """Copy the artifacts into the next version of every model; returns that number.

    Every file is checked before anything is written: a refused publish leaves no version.
    A model whose training found it no better than the recall order it re-ranks
    (``beats_recall_order`` false in its manifest) is refused unless ``allow_worse``.
    """
    _refuse_worse(artifacts_dir, allow_worse)
    sources = {model: _sources(artifacts_dir, model) for model in models}
    repository.mkdir(parents=True, exist_ok=True)
    # Two publishes at once would pick the same number; one waits for the other.
    with file_lock(repository / ".publish.lock"):
        number = 1 + max([0, *(v for m in models for v in versions(repository / m))])
        staged = [_stage(sources[m], repository / m, template, m) for m in models]
        for staging, model in zip(staged, models, strict=True):
            staging.rename(repository / model / str(number))
    return number


def _refuse_worse(artifacts_dir: Path, allow_worse: bool) -> None:
    manifest = json.loads(_manifest(artifacts_dir).read_text())
    if manifest.get("beats_recall_order") is False and not allow_worse:
        raise PublishError(
            f"{artifacts_dir}: training measured this model below the recall order it "
            "re-ranks (beats_recall_order false in manifest.json); serving it would make "
            "answers worse. Train on more data, or publish it anyway with allow_worse"
        )


def _sources(artifacts_dir: Path, model: str) -> dict[str, Path]:
    """Version-folder name -> artifacts file, for one model; PublishError if one is missing."""
    if model not in ARTIFACT_FILES:
        raise PublishError(f"unknown model {model!r}; known: {', '.join(ARTIFACT_FILES)}")
    sources = {MANIFEST: _manifest(artifacts_dir)}
    for name in ARTIFACT_FILES[model]:
        path = served_file(artifacts_dir) if name == SERVED_ONNX else artifacts_dir / name
        if not path.exists():
            raise PublishError(
                f"{artifacts_dir} has no {name}, which {model} serves; artifacts written "
                f"before {model} existed lack it: retrain with `make train` (or publish "
                f"only the other models with --models)"
            )
        sources[name] = path
    return sources


def _manifest(artifacts_dir: Path) -> Path:
    manifest_path = artifacts_dir / MANIFEST
    if not manifest_path.exists():
        raise PublishError(
            f"{artifacts_dir} has no {MANIFEST}: not a ranker artifacts directory "
            "(train one with `make train`, or set STREAMREC_MODEL_DIR)"
        )
    return manifest_path


def served_file(artifacts_dir: Path) -> Path:
    """The ONNX file manifest.json names as served (`served_file`), inside ``artifacts_dir``."""
    manifest = json.loads(_manifest(artifacts_dir).read_text())
    try:
        path = served_file_path(artifacts_dir, manifest)
    except ModelPathError as exc:
        raise PublishError(f"{MANIFEST} served_file: {exc}") from None
    if not path.exists():
        raise PublishError(f"{MANIFEST} names {path.name} as served, but {path} is missing")
    return path


def _stage(sources: dict[str, Path], model_dir: Path, template: Path, model: str) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    if not (model_dir / CONFIG).exists():
        _write_atomic(model_dir / CONFIG, (template / model / CONFIG).read_text())
    # Hidden and not a number: Triton ignores it while it is being filled.
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=model_dir))
    for name, source in sources.items():
        shutil.copyfile(source, staging / name)
    if (template / model / PYTHON_MODEL).exists():
        shutil.copyfile(template / model / PYTHON_MODEL, staging / PYTHON_MODEL)
        for shared in SHARED_PYTHON_FILES:
            shutil.copyfile(template / shared, staging / shared)
    staging.chmod(0o755)
    return staging


def read_limits(version_dir: Path) -> tuple[int, int]:
    """(num_items, num_categories) of a published version, from its model_config.json."""
    path = version_dir / MODEL_CONFIG_FILE
    if not path.exists():
        raise PublishError(f"{path} is missing; republish from a complete artifacts directory")
    config = json.loads(path.read_text())
    return int(config["num_items"]), int(config["num_categories"])


def read_config(model_dir: Path) -> Any:
    """The model's config.pbtxt as a ModelConfig message."""
    from google.protobuf import text_format  # type: ignore[import-untyped]
    from tritonclient.grpc import model_config_pb2  # type: ignore[import-untyped]

    return text_format.Parse((model_dir / CONFIG).read_text(), model_config_pb2.ModelConfig())


def config_json(config: Any) -> str:
    """The JSON form Triton's load API takes as a config override."""
    from google.protobuf import json_format

    text: str = json_format.MessageToJson(config, preserving_proto_field_name=True, indent=None)
    return text


def with_versions(config: Any, served: Sequence[int]) -> Any:
    """A copy of `config` whose version policy serves exactly `served`."""
    pinned = type(config)()
    pinned.CopyFrom(config)
    pinned.version_policy.Clear()
    pinned.version_policy.specific.versions.extend(sorted(served))
    return pinned


def pin_versions(model_dir: Path, served: Sequence[int]) -> None:
    """Rewrite config.pbtxt to serve `served`, so a restarted server serves the same."""
    from google.protobuf import text_format

    config = with_versions(read_config(model_dir), served)
    header = "# Version policy pinned by `python -m inference.serving` rollout/rollback.\n"
    _write_atomic(model_dir / CONFIG, header + text_format.MessageToString(config))


def pinned_versions(model_dir: Path) -> list[int] | None:
    """The versions config.pbtxt pins, or None when it serves the newest."""
    config = read_config(model_dir)
    if config.version_policy.WhichOneof("policy_choice") != "specific":
        return None
    return sorted(config.version_policy.specific.versions)


def _write_atomic(path: Path, text: str) -> None:
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "w") as out:
        out.write(text)
    Path(temp).chmod(0o644)
    Path(temp).replace(path)
