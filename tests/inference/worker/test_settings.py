from __future__ import annotations

from pathlib import Path

import pytest

from inference.worker.errors import SettingsError
from inference.worker.settings import WorkerSettings, parse_args, settings_from


def test_defaults_and_environment() -> None:
    assert WorkerSettings.from_env({}).triton_model == "ranker"
    settings = WorkerSettings.from_env(
        {
            "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": "k:1",
            "STREAMREC_REDIS_URL": "redis://r:2/0",
            "STREAMREC_TRITON_URL": "t:3",
            "STREAMREC_TRITON_MODEL": "ranker_python",
            "STREAMREC_MODEL_DIR": "/m",
            "STREAMREC_WORKER_BATCH_SIZE": "32",
            "STREAMREC_WORKER_EXACTLY_ONCE": "true",
        }
    )
    assert settings.kafka.bootstrap_servers == "k:1"
    assert (settings.redis_url, settings.triton_url) == ("redis://r:2/0", "t:3")
    assert settings.triton_model == "ranker_python" and settings.model_dir == Path("/m")
    assert settings.batch_size == 32 and settings.exactly_once


def test_flags_override_the_environment() -> None:
    args = parse_args(["--batch-size", "8", "--scorer", "onnx", "--covisit-clicks", "3"])
    settings = settings_from(args, {"STREAMREC_WORKER_BATCH_SIZE": "32"})
    assert settings.batch_size == 8 and settings.scorer == "onnx"
    assert (settings.covisit_clicks, settings.covisit_candidates) == (3, 40)


@pytest.mark.parametrize(
    "env",
    [
        {"STREAMREC_WORKER_BATCH_SIZE": "0"},
        {"STREAMREC_WORKER_BATCH_SIZE": "many"},
        {"STREAMREC_WORKER_SCORER": "gpu"},
        {"STREAMREC_WORKER_COVISIT_CLICKS": "-1"},
    ],
)
def test_bad_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        WorkerSettings.from_env(env)


def test_feature_reads_go_to_the_store_unless_a_read_url_is_set() -> None:
    assert WorkerSettings.from_env({}).redis_read_url == ""
    settings = WorkerSettings.from_env(
        {
            "STREAMREC_REDIS_URL": "redis://primary:6379/0",
            "STREAMREC_WORKER_REDIS_READ_URL": "redis://reader:s3cret@replica:6380/0",
        }
    )
    assert settings.redis_read_url == "redis://reader:s3cret@replica:6380/0"
    line = settings.describe()
    assert "redis_read_url=redis://reader:***@replica:6380/0" in line and "s3cret" not in line
