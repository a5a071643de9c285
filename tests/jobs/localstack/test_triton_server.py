"""The Triton service: what is unpacked from the wheel, its environment and command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs.localstack import StackSettings
from jobs.localstack.triton_server import (
    TritonService,
    backend_dir,
    published_models,
    server_env,
    wanted,
)


@pytest.mark.parametrize(
    ("member", "keep"),
    [
        ("pytriton/tritonserver/bin/tritonserver", True),
        ("pytriton/tritonserver/backends/python/libtriton_python.so", True),
        ("pytriton/tritonserver/python_backend_stubs/3.11/triton_python_backend_stub", True),
        ("pytriton/tritonserver/caches/local/libtritoncache_local.so", True),
        ("nvidia_pytriton.libs/libtritonserver-717102f0.so", True),
        ("pytriton/triton.py", False),
        ("pytriton/tritonserver/external_libs/x.so", False),
        ("nvidia_pytriton-0.7.0.dist-info/METADATA", False),
    ],
)
def test_only_server_parts_are_unpacked(member: str, keep: bool) -> None:
    assert wanted(member) is keep


def test_environment_puts_our_libraries_and_python_first(tmp_path: Path) -> None:
    env = server_env(tmp_path, {"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/opt/lib"}, "/v/bin/python")
    libs = env["LD_LIBRARY_PATH"].split(os.pathsep)
    assert libs[0] == str(tmp_path / "lib") and libs[-1] == "/opt/lib"
    assert env["PATH"].split(os.pathsep) == ["/v/bin", "/usr/bin"]


def test_backend_folder_is_per_python_version(tmp_path: Path) -> None:
    assert backend_dir(tmp_path, "3.12") == tmp_path / "backends-py3.12"


def _publish_fake(repository: Path, model: str, version: str) -> None:
    (repository / model / version).mkdir(parents=True)
    (repository / model / "config.pbtxt").write_text(f'name: "{model}"\n')


def test_only_published_models_are_loaded_at_start(tmp_path: Path) -> None:
    settings = StackSettings(
        home=tmp_path / "home",
        cache_dir=tmp_path / "cache",
        triton_http_port=18000,
        triton_models=("ranker_python", "ranker"),
    )
    service = TritonService(settings)
    assert service.repository == tmp_path / "home" / "models"
    _publish_fake(service.repository, "ranker_python", "3")
    (service.repository / "ranker").mkdir()  # a model folder without versions
    assert published_models(service.repository, settings.triton_models) == ["ranker_python"]
    argv = service.command()
    assert "--load-model=ranker_python" in argv
    assert "--load-model=ranker" not in argv
    assert "--model-control-mode=explicit" in argv
    assert "--http-port=18000" in argv
    # The stack recognises its process by a path inside the service folder.
    assert any(service.marker in arg for arg in argv)


def test_settings_read_triton_ports_and_repository(tmp_path: Path) -> None:
    env = {
        "STREAMREC_TRITON_HTTP_PORT": "18000",
        "STREAMREC_TRITON_GRPC_PORT": "18001",
        "STREAMREC_TRITON_METRICS_PORT": "18002",
        "STREAMREC_TRITON_MODEL_REPOSITORY": str(tmp_path / "repo"),
        "STREAMREC_TRITON_MODELS": "ranker_python, ranker",
    }
    settings = StackSettings.from_env(env, cwd=tmp_path)
    assert settings.triton_grpc_url == "127.0.0.1:18001"
    assert settings.triton_http_url == "http://127.0.0.1:18000"
    assert settings.triton_metrics_port == 18002
    assert settings.model_repository == tmp_path / "repo"
    assert settings.triton_models == ("ranker_python", "ranker")
    assert StackSettings.from_env({}, cwd=tmp_path).model_repository == (
        tmp_path.resolve() / ".stack" / "models"
    )
