"""Publishing a version of the MLflow model registry: ``models:/<name>/<version>`` or ``@<alias>``.

The version's files (the model directory training uploaded) are downloaded into a
temporary folder and published from there as any artifacts directory is. The
published ``manifest.json`` gains a ``registry`` object naming the registered model,
its version and the run it came from, so whatever reads a published version can
say which registry version it is.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.serving import repository
from inference.serving.errors import PublishError
from inference.serving.settings import MODELS
from runtime.model_registry import (
    DEFAULT_TRACKING_URI,
    ModelReference,
    ModelVersion,
    RegistryError,
    fetch_model,
    parse_model_uri,
    tracking_uri,
)
from schemas.model_files import MANIFEST_FILE

# The manifest key that records where a published version came from.
REGISTRY_KEY = "registry"


@dataclass(frozen=True)
class Published:
    number: int  # the version number in the Triton model repository
    version: ModelVersion  # the registry's version


def registry_record(reference: ModelReference, version: ModelVersion, uri: str) -> dict[str, str]:
    """What the manifest's ``registry`` object holds."""
    record = {
        "name": version.name,
        "version": version.version,
        "uri": str(reference),
        "run_id": version.run_id,
        "tracking_uri": uri,
    }
    if reference.alias is not None:
        record["alias"] = reference.alias
    return record


def record_origin(directory: Path, record: dict[str, str]) -> None:
    """Add ``record`` to the downloaded manifest.json (publish explains a missing one)."""
    path = directory / MANIFEST_FILE
    if not path.is_file():
        return
    manifest: dict[str, Any] = json.loads(path.read_text())
    manifest[REGISTRY_KEY] = record
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def publish_registered(
    model_uri: str,
    target: Path,
    models: Sequence[str] = MODELS,
    uri: str | None = None,
    template: Path | None = None,
) -> Published:
    """Download the version ``model_uri`` names and publish it into the repository ``target``.

    The tracking server is ``uri``, else ``MLFLOW_TRACKING_URI``, else the local stack's.
    """
    server = uri or tracking_uri(default=DEFAULT_TRACKING_URI)
    try:
        reference = parse_model_uri(model_uri)
        with tempfile.TemporaryDirectory(prefix="streamrec-registry-") as temp:
            folder = Path(temp)
            version = fetch_model(reference, folder, server)
            record_origin(folder, registry_record(reference, version, server))
            if template is None:
                number = repository.publish(folder, target, models)
            else:
                number = repository.publish(folder, target, models, template)
    except RegistryError as error:
        raise PublishError(f"{model_uri} from {server}: {error}") from None
    return Published(number, version)
