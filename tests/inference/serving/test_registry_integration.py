"""The model lifecycle's first part on a real MLflow server: log, register, alias, publish.

The stack manager starts the server on a free port in a temporary home (its venv is
made once under the cache folder, minutes on a fresh clone, then reused). A small
artifacts directory is logged and registered the way training does it, aliased
``champion``, then published from ``models:/streamrec-ranker@champion``: the
published files must be the registered ones, and the manifest must say which
registry version they are.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from inference.serving import cli
from inference.serving.repository import ARTIFACT_FILES, SERVED_ONNX
from jobs.ranker.registry import log_and_register, register_training, result_metrics
from jobs.ranker.report import result_line
from jobs.ranker.settings import TrainSettings
from runtime.model_registry import REGISTERED_MODEL, RegistryClient
from tests.inference.serving.artifacts import write_serving_artifacts
from tests.support.training_metrics import training_metrics

pytestmark = pytest.mark.integration


@pytest.fixture
def registry(mlflow_registry: str) -> str:
    return mlflow_registry


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


def test_a_registered_version_published_by_alias_is_the_logged_model(
    registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts = write_serving_artifacts(tmp_path / "artifacts", num_items=50, num_categories=5)
    (artifacts / "metrics.json").write_text('{"auc": 0.5}\n')
    client = RegistryClient(registry)
    run_id, version = log_and_register(
        client,
        artifacts,
        run_name="integration",
        params={"dataset": "tiny", "dataset_sha256": "ab" * 32, "epochs": "1"},
        metrics={"auc": 0.5, "recall_at_50": 0.25},
        tags={"streamrec.code_revision": "test"},
    )
    assert version.name == REGISTERED_MODEL and version.run_id == run_id
    client.set_alias(REGISTERED_MODEL, "champion", version.version)
    # What the run holds, as the tracking server reports it.
    data = client._call("GET", "runs/get", query={"run_id": run_id})["run"]["data"]
    assert {p["key"]: p["value"] for p in data["params"]}["dataset_sha256"] == "ab" * 32
    assert {m["key"]: m["value"] for m in data["metrics"]} == {"auc": 0.5, "recall_at_50": 0.25}

    monkeypatch.setenv("MLFLOW_TRACKING_URI", registry)
    repo = tmp_path / "repo"
    assert (
        cli.main(["--repository", str(repo), "publish", "models:/streamrec-ranker@champion"]) == 0
    )

    original = _files(artifacts)
    for model, names in ARTIFACT_FILES.items():
        published = _files(repo / model / "1")
        for name in names:
            assert published[name] == original[name], (model, name)
        manifest: dict[str, Any] = json.loads(published["manifest.json"])
        registry_record = manifest.pop("registry")
        assert manifest == json.loads(original["manifest.json"])
        assert registry_record["name"] == REGISTERED_MODEL
        assert registry_record["version"] == version.version
        assert registry_record["alias"] == "champion"
        assert registry_record["run_id"] == run_id
    assert SERVED_ONNX in ARTIFACT_FILES["ranker"]

    # The same version by number, and nothing to publish for a version that is not there.
    number = f"models:/streamrec-ranker/{version.version}"
    assert cli.main(["--repository", str(repo), "publish", number, "--models", "ranker"]) == 0
    assert _files(repo / "ranker" / "2")["model.onnx"] == original["model.onnx"]
    assert cli.main(["--repository", str(repo), "publish", "models:/streamrec-ranker/999"]) == 2


def test_training_registration_logs_lineage_and_every_result_metric(
    registry: str, tmp_path: Path
) -> None:
    """register_training on a written model directory (the training itself is not rerun)."""
    data = tmp_path / "events.csv"
    data.write_text("1,2,3,pv,1511544070\n")
    out = write_serving_artifacts(tmp_path / "out", num_items=50, num_categories=5)
    settings = replace(TrainSettings(dataset="taobao-9days", file=data), out=out)
    metrics = training_metrics(served_variant="fp32")
    run_id, version = register_training(settings, metrics, registry)
    client = RegistryClient(registry)
    run = client._call("GET", "runs/get", query={"run_id": run_id})["run"]
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    logged = {m["key"] for m in run["data"]["metrics"]}
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert run["info"]["status"] == "FINISHED"
    assert params["dataset"] == "taobao-9days" and len(params["dataset_sha256"]) == 64
    assert len(params["ranker_sources_sha256"]) == 64 and params["served_variant"] == "fp32"
    assert len(tags["mlflow.source.git.commit"]) == 40
    assert {"hit_at_10", "served_variant_auc", "covisit_full_ndcg_at_10", "eval_rows"} <= logged
    assert logged == set(result_metrics(result_line(metrics)))  # every RESULT key, no other
    assert client.get_model_version(REGISTERED_MODEL, version.version).run_id == run_id
