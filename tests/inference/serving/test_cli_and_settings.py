"""The serving CLI's publish command and its settings, without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.serving import cli, repository
from inference.serving.errors import ServingError
from inference.serving.settings import ServingSettings
from tests.inference.serving.artifacts import write_serving_artifacts


def test_settings_defaults_and_overrides(tmp_path: Path) -> None:
    default = ServingSettings.from_env({}, cwd=tmp_path)
    assert default.repository == tmp_path.resolve() / ".stack" / "models"
    assert (default.http_url, default.model) == ("http://127.0.0.1:8000", "ranker_python")
    env = {
        "STREAMREC_TRITON_MODEL_REPOSITORY": "repo",
        "STREAMREC_TRITON_HTTP_PORT": "18000",
        "STREAMREC_TRITON_MODEL": "ranker",
        "STREAMREC_MODEL_DIR": "/models/ranker",
    }
    custom = ServingSettings.from_env(env, cwd=tmp_path)
    assert custom.repository == tmp_path.resolve() / "repo"
    assert (custom.http_url, custom.model) == ("http://127.0.0.1:18000", "ranker")
    assert custom.artifacts_dir == Path("/models/ranker")


def test_an_unknown_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServingError, match="ranker_gpu"):
        ServingSettings.from_env({"STREAMREC_TRITON_MODEL": "ranker_gpu"}, cwd=tmp_path)


def test_publish_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    artifacts = write_serving_artifacts(tmp_path / "artifacts", num_items=50, num_categories=5)
    repo = tmp_path / "repo"
    assert cli.main(["--repository", str(repo), "publish", str(artifacts)]) == 0
    assert "as version 1 of ranker, ranker_python, ranker_torch" in capsys.readouterr().out
    assert repository.read_limits(repo / "ranker_python" / "1") == (50, 5)


def test_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--repository", str(tmp_path), "publish", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    url = "http://127.0.0.1:1"  # nothing listens there
    assert cli.main(["--repository", str(tmp_path), "--url", url, "rollback"]) == 2
    assert "unreachable" in capsys.readouterr().err
