"""The model repository on disk: numbered versions, publishing one, pinning which are served.

Publishing copies an artifacts directory's served ONNX file (named in its
manifest.json) into the next version number of every model, the same number in
each, so `ranker` (ONNX Runtime backend) and `ranker_python` (python backend)
version N are the same weights. A version folder is built under a hidden name and
renamed into place, so Triton never sees half a version.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format  # type: ignore[import-untyped]
from tritonclient.grpc import model_config_pb2  # type: ignore[import-untyped]

from inference.serving.errors import PublishError
from inference.serving.settings import MODELS, TEMPLATE_REPOSITORY
from schemas.files import file_lock
from schemas.ranking import MANIFEST_FILE as MANIFEST

CONFIG = "config.pbtxt"
PYTHON_MODEL = "model.py"
# Files beside the python backend's model.py: its id checks read model_config.json.
PYTHON_EXTRAS = ("model_config.json",)


def versions(model_dir: Path) -> list[int]:
    """The numbered version folders of one model, ascending ([] if none)."""
    if not model_dir.is_dir():
        return []
    return sorted(int(p.name) for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit())


def served_file(artifacts_dir: Path) -> Path:
    """The ONNX file manifest.json names as served (`served_file`)."""
    manifest_path = artifacts_dir / MANIFEST
    if not manifest_path.exists():
        raise PublishError(
            f"{artifacts_dir} has no {MANIFEST}: not a ranker artifacts directory "
            "(train one with `make train`, or set STREAMREC_MODEL_DIR)"
        )
    manifest = json.loads(manifest_path.read_text())
    path = artifacts_dir / str(manifest.get("served_file", "model.onnx"))
    if not path.exists():
        raise PublishError(f"{MANIFEST} names {path.name} as served, but {path} is missing")
    return path


def publish(
    artifacts_dir: Path,
    repository: Path,
    models: Sequence[str] = MODELS,
    template: Path = TEMPLATE_REPOSITORY,
) -> int:
    """Copy the served model into the next version of every model; returns that number."""
    onnx_file = served_file(artifacts_dir)
    for extra in PYTHON_EXTRAS:
        if "ranker_python" in models and not (artifacts_dir / extra).exists():
            raise PublishError(f"{artifacts_dir} has no {extra} (the python model needs it)")
    repository.mkdir(parents=True, exist_ok=True)
    # Two publishes at once would pick the same number; one waits for the other.
    with file_lock(repository / ".publish.lock"):
        number = 1 + max([0, *(v for m in models for v in versions(repository / m))])
        staged = [_stage(artifacts_dir, onnx_file, repository / m, template / m) for m in models]
        for staging, model in zip(staged, models, strict=True):
            staging.rename(repository / model / str(number))
    return number


def _stage(artifacts_dir: Path, onnx_file: Path, model_dir: Path, template_dir: Path) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    if not (model_dir / CONFIG).exists():
        _write_atomic(model_dir / CONFIG, (template_dir / CONFIG).read_text())
    # Hidden and not a number: Triton ignores it while it is being filled.
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=model_dir))
    shutil.copyfile(onnx_file, staging / "model.onnx")
    shutil.copyfile(artifacts_dir / MANIFEST, staging / MANIFEST)
    for extra in PYTHON_EXTRAS:
        if (artifacts_dir / extra).exists():
            shutil.copyfile(artifacts_dir / extra, staging / extra)
    if (template_dir / PYTHON_MODEL).exists():
        shutil.copyfile(template_dir / PYTHON_MODEL, staging / PYTHON_MODEL)
    staging.chmod(0o755)
    return staging


def read_limits(version_dir: Path) -> tuple[int, int]:
    """(num_items, num_categories) of a published version, from its model_config.json."""
    path = version_dir / "model_config.json"
    if not path.exists():
        raise PublishError(f"{path} is missing; republish from a complete artifacts directory")
    config = json.loads(path.read_text())
    return int(config["num_items"]), int(config["num_categories"])


def read_config(model_dir: Path) -> Any:
    """The model's config.pbtxt as a ModelConfig message."""
    return text_format.Parse((model_dir / CONFIG).read_text(), model_config_pb2.ModelConfig())


def config_json(config: Any) -> str:
    """The JSON form Triton's load API takes as a config override."""
    text: str = json_format.MessageToJson(config, preserving_proto_field_name=True, indent=None)
    return text


def with_versions(config: Any, served: Sequence[int]) -> Any:
    """A copy of `config` whose version policy serves exactly `served`."""
    pinned = model_config_pb2.ModelConfig()
    pinned.CopyFrom(config)
    pinned.version_policy.Clear()
    pinned.version_policy.specific.versions.extend(sorted(served))
    return pinned


def pin_versions(model_dir: Path, served: Sequence[int]) -> None:
    """Rewrite config.pbtxt to serve `served`, so a restarted server serves the same."""
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
