from pathlib import Path

import pytest

from jobs.localstack import StackError, StackSettings


def test_defaults_live_in_the_working_directory(tmp_path: Path) -> None:
    settings = StackSettings.from_env({}, cwd=tmp_path)
    assert settings.home == tmp_path.resolve() / ".stack"
    assert settings.cache_dir == tmp_path.resolve() / ".cache"
    assert (settings.kafka_port, settings.kafka_controller_port, settings.redis_port) == (
        9092,
        9093,
        6379,
    )


def test_environment_overrides_everything(tmp_path: Path) -> None:
    env = {
        "STREAMREC_STACK_HOME": str(tmp_path / "home"),
        "STREAMREC_CACHE_DIR": str(tmp_path / "cache"),
        "STREAMREC_KAFKA_PORT": "19092",
        "STREAMREC_KAFKA_CONTROLLER_PORT": "19093",
        "STREAMREC_REDIS_PORT": " 16379 ",
    }
    settings = StackSettings.from_env(env, cwd=Path("/nowhere"))
    assert settings.home == tmp_path / "home"
    assert settings.cache_dir == tmp_path / "cache"
    assert settings.kafka_bootstrap == "127.0.0.1:19092"
    assert settings.kafka_controller_port == 19093
    assert settings.redis_url == "redis://127.0.0.1:16379/0"


def test_relative_home_is_made_absolute(tmp_path: Path) -> None:
    # The home path is the marker for our processes, so it must be unambiguous.
    settings = StackSettings.from_env({"STREAMREC_STACK_HOME": "rel/home"}, cwd=tmp_path)
    assert settings.home.is_absolute()


@pytest.mark.parametrize("raw", ["abc", "0", "70000", "-1"])
def test_bad_ports_are_rejected_with_the_variable_name(raw: str) -> None:
    with pytest.raises(StackError, match="STREAMREC_REDIS_PORT"):
        StackSettings.from_env({"STREAMREC_REDIS_PORT": raw})


def test_settings_are_frozen(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, 1, 2, 3)
    with pytest.raises(AttributeError):
        settings.redis_port = 4  # type: ignore[misc]


def test_flink_ports_default_to_flinks_own_and_follow_the_environment(tmp_path: Path) -> None:
    defaults = StackSettings.from_env({}, cwd=tmp_path)
    assert (defaults.flink_rest_port, defaults.flink_rpc_port) == (8081, 6123)
    assert defaults.flink_rest_url == "http://127.0.0.1:8081"
    env = {"STREAMREC_FLINK_REST_PORT": "18081", "STREAMREC_FLINK_RPC_PORT": "16123"}
    settings = StackSettings.from_env(env, cwd=tmp_path)
    assert (settings.flink_rest_port, settings.flink_rpc_port) == (18081, 16123)
    assert settings.flink_rest_url == "http://127.0.0.1:18081"
    with pytest.raises(StackError, match="STREAMREC_FLINK_RPC_PORT"):
        StackSettings.from_env({"STREAMREC_FLINK_RPC_PORT": "x"})


def test_flink_metrics_ports_are_fixed_per_process_and_follow_the_environment(
    tmp_path: Path,
) -> None:
    defaults = StackSettings.from_env({}, cwd=tmp_path)
    ports = (defaults.flink_jobmanager_metrics_port, defaults.flink_taskmanager_metrics_port)
    assert ports == (9249, 9250)
    env = {
        "STREAMREC_FLINK_JOBMANAGER_METRICS_PORT": "19249",
        "STREAMREC_FLINK_TASKMANAGER_METRICS_PORT": "19250",
    }
    settings = StackSettings.from_env(env, cwd=tmp_path)
    assert (settings.flink_jobmanager_metrics_port, settings.flink_taskmanager_metrics_port) == (
        19249,
        19250,
    )
    with pytest.raises(StackError, match="STREAMREC_FLINK_TASKMANAGER_METRICS_PORT"):
        StackSettings.from_env({"STREAMREC_FLINK_TASKMANAGER_METRICS_PORT": "0"})
