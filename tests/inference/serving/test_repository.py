"""Publishing versions and pinning the served ones, on disk only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference.serving import repository
from inference.serving.errors import PublishError
from inference.serving.settings import MODELS, TEMPLATE_REPOSITORY


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (folder / "model.int8.onnx").write_bytes(b"int8 weights")
    (folder / "model.onnx").write_bytes(b"fp32 weights")
    (folder / "model_config.json").write_text(json.dumps({"num_items": 9, "num_categories": 4}))
    (folder / "model.pt").write_bytes(b"torch weights")
    (folder / "network.py").write_text("# the network's source\n")
    manifest = {"served_variant": "int8", "served_file": "model.int8.onnx"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_publish_writes_the_served_file_as_the_next_version(
    artifacts: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    assert repository.publish(artifacts, repo) == 1
    assert repository.publish(artifacts, repo) == 2
    for model in MODELS:
        assert repository.versions(repo / model) == [1, 2]
        assert (repo / model / "config.pbtxt").exists()
        # No staging folder is left behind for Triton to trip over.
        assert sorted(p.name for p in (repo / model).iterdir()) == ["1", "2", "config.pbtxt"]
    for model in ("ranker", "ranker_python"):
        assert (repo / model / "2" / "model.onnx").read_bytes() == b"int8 weights"
    python_version = repo / "ranker_python" / "2"
    assert (python_version / "model.py").read_text().startswith('"""Triton python-backend')
    assert repository.read_limits(python_version) == (9, 4)
    torch_version = repo / "ranker_torch" / "2"
    assert sorted(p.name for p in torch_version.iterdir()) == [
        "manifest.json",
        "model.pt",
        "model.py",
        "model_config.json",
        "network.py",
        "request_handling.py",
    ]
    assert (torch_version / "model.pt").read_bytes() == b"torch weights"


def test_every_model_has_its_files_and_its_template() -> None:
    assert tuple(repository.ARTIFACT_FILES) == MODELS
    for model in MODELS:
        assert (TEMPLATE_REPOSITORY / model / "config.pbtxt").exists()


def test_artifacts_without_the_network_source_are_refused_whole(
    artifacts: Path, tmp_path: Path
) -> None:
    (artifacts / "network.py").unlink()
    repo = tmp_path / "repo"
    with pytest.raises(PublishError, match=r"no network\.py.*retrain with `make train`"):
        repository.publish(artifacts, repo)
    assert not repo.exists() or all(repository.versions(repo / m) == [] for m in MODELS)
    # The ONNX models alone still publish from such artifacts.
    assert repository.publish(artifacts, repo, ["ranker", "ranker_python"]) == 1


def test_the_torch_model_alone_needs_no_onnx_file(artifacts: Path, tmp_path: Path) -> None:
    (artifacts / "model.int8.onnx").unlink()
    assert repository.publish(artifacts, tmp_path / "repo", ["ranker_torch"]) == 1
    with pytest.raises(PublishError, match=r"model\.int8\.onnx"):
        repository.publish(artifacts, tmp_path / "repo", ["ranker_python"])


def test_an_unknown_model_is_refused(artifacts: Path, tmp_path: Path) -> None:
    with pytest.raises(PublishError, match="ranker_gpu"):
        repository.publish(artifacts, tmp_path / "repo", ["ranker_gpu"])


def test_versions_line_up_across_models(artifacts: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repository.publish(artifacts, repo, ["ranker_python"])
    assert repository.publish(artifacts, repo) == 2
    assert repository.versions(repo / "ranker") == [2]


def test_publish_refuses_a_folder_without_manifest(tmp_path: Path) -> None:
    with pytest.raises(PublishError, match=r"no manifest\.json"):
        repository.publish(tmp_path, tmp_path / "repo")


def test_publish_refuses_a_missing_served_file(artifacts: Path, tmp_path: Path) -> None:
    (artifacts / "model.int8.onnx").unlink()
    with pytest.raises(PublishError, match=r"model\.int8\.onnx"):
        repository.publish(artifacts, tmp_path / "repo")


def test_pinning_rewrites_only_the_version_policy(artifacts: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repository.publish(artifacts, repo)
    model_dir = repo / "ranker_python"
    assert repository.pinned_versions(model_dir) is None
    before = repository.read_config(model_dir)
    repository.pin_versions(model_dir, [2, 1])
    assert repository.pinned_versions(model_dir) == [1, 2]
    after = repository.read_config(model_dir)
    after.ClearField("version_policy")
    before.ClearField("version_policy")
    assert after == before


def test_config_json_is_what_triton_reads(artifacts: Path, tmp_path: Path) -> None:
    repository.publish(artifacts, tmp_path)
    config = repository.with_versions(repository.read_config(tmp_path / "ranker"), [3])
    parsed = json.loads(repository.config_json(config))
    assert parsed["version_policy"] == {"specific": {"versions": ["3"]}}
    assert parsed["platform"] == "onnxruntime_onnx"
    assert parsed["max_batch_size"] == 256


def test_every_model_bounds_its_queue_and_drops_requests_past_their_timeout() -> None:
    """Without a queue policy Triton queues without limit: overload turns into minutes."""
    from google.protobuf import text_format  # type: ignore[import-untyped]
    from tritonclient.grpc import model_config_pb2  # type: ignore[import-untyped]

    for model in MODELS:
        text = (TEMPLATE_REPOSITORY / model / "config.pbtxt").read_text()
        config = text_format.Parse(text, model_config_pb2.ModelConfig())
        policy = config.dynamic_batching.default_queue_policy
        assert 0 < policy.max_queue_size <= 1024, model
        assert policy.timeout_action == model_config_pb2.ModelQueuePolicy.REJECT, model
        assert 0 < policy.default_timeout_microseconds <= 30_000_000, model
        assert policy.allow_timeout_override, model  # the worker sends its own budget
