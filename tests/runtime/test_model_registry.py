"""The MLflow REST client's pure parts: model URIs, artifact paths, what it uploads."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.model_registry import (
    DEFAULT_TRACKING_URI,
    ModelReference,
    RegistryClient,
    RegistryError,
    artifact_path,
    files_under,
    is_model_uri,
    parse_model_uri,
    tracking_uri,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("models:/streamrec-ranker/3", ModelReference("streamrec-ranker", "3", None)),
        ("models:/streamrec-ranker@champion", ModelReference("streamrec-ranker", None, "champion")),
        (" models:/a.b_c/12 ", ModelReference("a.b_c", "12", None)),
        ("models:/m@challenger-2", ModelReference("m", None, "challenger-2")),
    ],
)
def test_model_uris_name_a_version_or_an_alias(text: str, expected: ModelReference) -> None:
    assert parse_model_uri(text) == expected
    assert str(expected) == text.strip()


@pytest.mark.parametrize(
    "text",
    [
        "models:/streamrec-ranker",
        "models:/streamrec-ranker/latest",
        "models:/streamrec-ranker/3/extra",
        "models:/streamrec-ranker@",
        "models:/streamrec-ranker@1st",
        "models:/../x/1",
        "models://host/streamrec-ranker/1",
        "runs:/abc/model",
        "/tmp/artifacts",
    ],
)
def test_malformed_model_uris_are_refused_with_the_forms(text: str) -> None:
    with pytest.raises(RegistryError, match=r"models:/<name>/<version>"):
        parse_model_uri(text)


def test_only_models_uris_go_to_the_registry() -> None:
    assert is_model_uri("models:/streamrec-ranker@champion")
    assert not is_model_uri("/work/models/ranker")
    assert not is_model_uri("models/ranker")  # a relative folder named models


@pytest.mark.parametrize(
    "uri",
    [
        "mlflow-artifacts:/1/abc/artifacts/model",
        "mlflow-artifacts://127.0.0.1:5000/1/abc/artifacts/model",
        "mlflow-artifacts:/1//abc/./artifacts/model/",
    ],
)
def test_artifact_uris_map_to_the_proxy_path(uri: str) -> None:
    assert artifact_path(uri) == "1/abc/artifacts/model"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("file:///srv/mlflow/artifacts/1/abc", "--serve-artifacts"),
        ("s3://bucket/1/abc", "--serve-artifacts"),
        ("mlflow-artifacts:/1/../../etc", "leaves its folder"),
        ("mlflow-artifacts:/", "names no path"),
    ],
)
def test_other_artifact_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        artifact_path(uri)


@pytest.mark.parametrize("uri", ["", "/tmp/mlruns", "file:///tmp/mlruns", "databricks"])
def test_the_client_needs_an_http_server(uri: str) -> None:
    with pytest.raises(RegistryError, match="http"):
        RegistryClient(uri)


def test_tracking_uri_comes_from_the_environment() -> None:
    assert tracking_uri({"MLFLOW_TRACKING_URI": " http://h:1 "}) == "http://h:1"
    assert tracking_uri({}) == ""
    assert tracking_uri({"MLFLOW_TRACKING_URI": ""}, DEFAULT_TRACKING_URI) == DEFAULT_TRACKING_URI


def test_uploads_take_every_file_but_hidden_ones(tmp_path: Path) -> None:
    for name in ("manifest.json", "sub/model.onnx", ".tmp/half", "sub/.lock"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert [p.as_posix() for p in files_under(tmp_path)] == ["manifest.json", "sub/model.onnx"]


def test_an_unreachable_server_is_an_error_not_a_hang() -> None:
    # Port 9 (discard) on loopback: nothing listens there in a test environment.
    client = RegistryClient("http://127.0.0.1:9", timeout_s=2)
    assert not client.healthy()
    with pytest.raises(RegistryError, match="cannot reach"):
        client.get_model_version("streamrec-ranker", "1")
