"""A training run in MLflow: what it was trained from, what it scored, and the model version.

After the job has written its model directory, :func:`register_training` logs one run
(the settings as params, the RESULT line's metrics, the dataset's name and content
hash, the code revision and a hash of the ranker's sources as params and tags),
uploads the whole directory as the run's ``model`` artifact folder and registers it as
the next version of ``streamrec-ranker``. ``streamrec-serving publish
models:/streamrec-ranker/<version>`` (or ``@<alias>``) publishes it from there.

Nothing here runs unless registration was asked for (``--register`` or
``MLFLOW_TRACKING_URI``): training without MLflow is what it always was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobs.datasets import default_path
from jobs.ranker.report import result_line
from jobs.ranker.settings import TrainSettings
from runtime.model_registry import (
    DEFAULT_TRACKING_URI,
    MODEL_ARTIFACT_PATH,
    REGISTERED_MODEL,
    ModelVersion,
    RegistryClient,
    RegistryError,
    tracking_uri,
)

RANKER_SOURCES = Path(__file__).resolve().parent
REPO_ROOT = RANKER_SOURCES.parents[1]
_CHUNK = 1 << 20
# MLflow's own tag for the commit, which its UI shows beside the run.
GIT_COMMIT_TAG = "mlflow.source.git.commit"


def registry_uri(settings: TrainSettings, environ: Mapping[str, str] | None = None) -> str | None:
    """The tracking server to register with, or None when registration is off.

    On with ``--register`` (``STREAMREC_TRAIN_REGISTER``) or whenever
    ``MLFLOW_TRACKING_URI`` is set; the server is that variable's, else the local stack's.
    """
    configured = tracking_uri(environ)
    if not (settings.register or configured):
        return None
    return configured or DEFAULT_TRACKING_URI


def check_reachable(uri: str) -> None:
    """RegistryError unless the server answers; checked before minutes of training."""
    if not RegistryClient(uri).healthy():
        raise RegistryError(
            f"no MLflow server answers at {uri}: start the local one with "
            "`python -m jobs.localstack up --services mlflow`, or unset MLFLOW_TRACKING_URI "
            "and drop --register to train without registering"
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_hash(path: Path, suffix: str = "") -> str:
    """SHA-256 of a file's bytes; for a folder, of its files' relative paths and hashes.

    A folder's hash depends on its contents only (not on where it is or the files'
    times); ``suffix`` keeps only names ending with it (".py": the sources).
    """
    if path.is_file():
        return file_sha256(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} does not exist")
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob(f"*{suffix}") if p.is_file()):
        relative = item.relative_to(path)
        if "__pycache__" in relative.parts:
            continue
        digest.update(f"{relative.as_posix()}\0{file_sha256(item)}\n".encode())
    return digest.hexdigest()


def git_revision(cwd: Path = REPO_ROOT) -> str:
    """``git rev-parse HEAD`` of the checkout, or "" (no git, not a checkout)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        if result.returncode == 0:
            return result.stdout.strip()
    return ""


def result_metrics(line: str) -> dict[str, float]:
    """The ``key=value`` pairs of a ``RESULT`` line, as numbers (what training prints)."""
    words = line.split()
    if not words or words[0] != "RESULT":
        raise ValueError(f"not a RESULT line: {line[:80]!r}")
    metrics = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        metrics[key] = float(value)
    return metrics


def settings_params(settings: TrainSettings) -> dict[str, str]:
    """Every training setting as an MLflow param (None: "")."""
    values = dataclasses.asdict(settings)
    return {name: "" if value is None else str(value) for name, value in values.items()}


@dataclasses.dataclass(frozen=True)
class Lineage:
    """Where a model came from: its data and its code."""

    dataset: str
    dataset_sha256: str
    git_commit: str
    sources_sha256: str

    @classmethod
    def of(cls, settings: TrainSettings) -> Lineage:
        data = settings.file or default_path(settings.dataset)
        return cls(
            dataset=settings.dataset,
            dataset_sha256=content_hash(data),
            git_commit=git_revision(),
            sources_sha256=content_hash(RANKER_SOURCES, ".py"),
        )

    def params(self) -> dict[str, str]:
        return {
            "dataset": self.dataset,
            "dataset_sha256": self.dataset_sha256,
            "code_revision": self.git_commit or "unknown",
            "ranker_sources_sha256": self.sources_sha256,
        }

    def tags(self) -> dict[str, str]:
        tags = {f"streamrec.{key}": value for key, value in self.params().items()}
        if self.git_commit:
            tags[GIT_COMMIT_TAG] = self.git_commit
        return tags


def log_and_register(
    client: RegistryClient,
    model_dir: Path,
    *,
    run_name: str,
    params: Mapping[str, str],
    metrics: Mapping[str, float],
    tags: Mapping[str, str],
    name: str = REGISTERED_MODEL,
    description: str = "",
) -> tuple[str, ModelVersion]:
    """One run holding ``model_dir`` as its ``model`` artifacts, registered as a version of
    ``name`` (created if new); the run id and the version. A failure marks the run FAILED."""
    run = client.create_run(client.experiment_id(name), run_name, tags)
    try:
        client.log_batch(run.run_id, params=params, metrics=metrics)
        source = f"{run.artifact_uri.rstrip('/')}/{MODEL_ARTIFACT_PATH}"
        client.upload_directory(model_dir, source)
        client.ensure_registered_model(name, "The DIN ranker's model directories (jobs.ranker).")
        version = client.create_model_version(name, source, run.run_id, tags, description)
    except BaseException:
        with contextlib.suppress(RegistryError):
            client.finish_run(run.run_id, "FAILED")
        raise
    client.finish_run(run.run_id)
    return run.run_id, version


def register_training(
    settings: TrainSettings, metrics: dict[str, Any], uri: str, name: str = REGISTERED_MODEL
) -> tuple[str, ModelVersion]:
    """Log the finished job (``metrics`` is its metrics.json) and register ``settings.out``."""
    lineage = Lineage.of(settings)
    params = {
        **settings_params(settings),
        **lineage.params(),
        "served_variant": str(metrics["served_variant"]),
    }
    return log_and_register(
        RegistryClient(uri),
        settings.out,
        run_name=f"{settings.dataset}-seed{settings.seed}",
        params=params,
        metrics=result_metrics(result_line(metrics)),
        tags=lineage.tags(),
        name=name,
        description=f"{settings.dataset} (sha256 {lineage.dataset_sha256[:12]}), "
        f"code {lineage.git_commit[:12] or 'unknown'}, served {metrics['served_variant']}",
    )
