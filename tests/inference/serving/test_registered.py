"""Publishing from the model registry, the parts that need no server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference.serving import cli
from inference.serving.registered import record_origin, registry_record
from runtime.model_registry import ModelVersion, parse_model_uri


def test_the_manifest_records_the_registry_version(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"served_file": "model.onnx"}))
    reference = parse_model_uri("models:/streamrec-ranker@champion")
    version = ModelVersion("streamrec-ranker", "4", "mlflow-artifacts:/1/r/artifacts/model", "r")
    record_origin(tmp_path, registry_record(reference, version, "http://127.0.0.1:5000"))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["served_file"] == "model.onnx"
    assert manifest["registry"] == {
        "name": "streamrec-ranker",
        "version": "4",
        "alias": "champion",
        "uri": "models:/streamrec-ranker@champion",
        "run_id": "r",
        "tracking_uri": "http://127.0.0.1:5000",
    }


def test_a_version_uri_records_no_alias() -> None:
    reference = parse_model_uri("models:/streamrec-ranker/4")
    version = ModelVersion("streamrec-ranker", "4", "", "r")
    assert "alias" not in registry_record(reference, version, "http://h:1")


def test_no_manifest_is_left_for_publish_to_explain(tmp_path: Path) -> None:
    record_origin(tmp_path, {"name": "x"})
    assert not (tmp_path / "manifest.json").exists()


@pytest.mark.parametrize(
    ("uri", "message"),
    [("models:/streamrec-ranker", "models:/<name>/<version>"), ("models:/m/1", "cannot reach")],
)
def test_publish_refuses_a_bad_uri_or_an_absent_server(
    uri: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    assert cli.main(["--repository", str(tmp_path / "repo"), "publish", uri]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "repo").exists() or not any((tmp_path / "repo").iterdir())
