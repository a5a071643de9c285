"""Settings from the environment, flags over them, secrets masked."""

from __future__ import annotations

import pytest

from jobs.feature_writer.errors import SettingsError
from jobs.feature_writer.settings import WriterSettings, mask_url, parse_args, settings_from
from jobs.localstack.prometheus_server import PORT_VARIABLES
from schemas.metrics_ports import METRICS_PORTS
from schemas.views import KEY_TTL_SECONDS


def test_defaults() -> None:
    settings = WriterSettings.from_env({})
    assert settings.topic == "feature-updates"
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert (settings.horizon_ms, settings.sequence_limit) == (1_800_000, 50)
    assert settings.key_ttl_seconds == KEY_TTL_SECONDS == 7 * 86_400


def test_environment_then_flags() -> None:
    env = {
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": "k:1",
        "STREAMREC_REDIS_URL": "redis://r:2/3",
        "STREAMREC_FEATURE_WRITER_TOPIC": "t",
        "STREAMREC_FEATURE_WRITER_BATCH_SIZE": "10",
        "STREAMREC_FEATURE_WRITER_HORIZON_MS": "60000",
        "STREAMREC_FEATURE_WRITER_KEY_TTL_SECONDS": "86400",
    }
    settings = settings_from(parse_args(["--limit", "20", "--bootstrap-servers", "k:9"]), env)
    assert settings.kafka.bootstrap_servers == "k:9"
    assert (settings.topic, settings.redis_url, settings.batch_size) == ("t", "redis://r:2/3", 10)
    assert settings.conversion.horizon_ms == 60_000
    assert settings.conversion.limit == 20
    assert settings.key_ttl_seconds == 86_400


@pytest.mark.parametrize(
    "env",
    [
        {"STREAMREC_FEATURE_WRITER_BATCH_SIZE": "many"},
        {"STREAMREC_FEATURE_WRITER_BATCH_SIZE": "0"},
        {"STREAMREC_FEATURE_WRITER_SEQUENCE_LIMIT": "0"},
        {"STREAMREC_FEATURE_WRITER_KEY_TTL_SECONDS": "-1"},
        {"STREAMREC_FEATURE_WRITER_COVISIT_NEIGHBOURS": "-1"},
        {"STREAMREC_FEATURE_WRITER_COVISIT_TTL_SECONDS": "0"},
        {"STREAMREC_FEATURE_WRITER_METRICS_PORT": "70000"},
        {"STREAMREC_FEATURE_WRITER_METRICS_PORT": "-1"},
    ],
)
def test_bad_values_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        WriterSettings.from_env(env)


def test_password_is_masked() -> None:
    assert mask_url("redis://u:s3cret@host:6380/1") == "redis://u:***@host:6380/1"
    assert mask_url("redis://host:6380/1") == "redis://host:6380/1"
    described = WriterSettings(redis_url="redis://:pw@h:1/0").describe()
    assert "pw" not in described.replace("pwd", "")


def test_help_mentions_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    out = capsys.readouterr().out
    for flag in (
        "--bootstrap-servers",
        "--topic",
        "--group-id",
        "--redis-url",
        "--batch-size",
        "--batch-timeout",
        "--horizon-ms",
        "--limit",
        "--max-records",
        "--covisit-neighbours",
        "--covisit-ttl-seconds",
        "--covisit-window-ms",
        "--metrics-port",
        "--metrics-host",
    ):
        assert flag in out


def test_covisit_options_from_settings_and_off_at_zero() -> None:
    env = {
        "STREAMREC_FEATURE_WRITER_PROJECT": "p",
        "STREAMREC_FEATURE_WRITER_COVISIT_TTL_SECONDS": "600",
    }
    options = settings_from(parse_args(["--covisit-neighbours", "7"]), env).covisit
    assert options is not None
    assert (options.project, options.neighbours, options.ttl_s) == ("p", 7, 600)
    assert (options.window_ms, options.seen_ttl_ms) == (1_800_000, 3_600_000)
    assert (
        WriterSettings.from_env({"STREAMREC_FEATURE_WRITER_COVISIT_NEIGHBOURS": "0"}).covisit
        is None
    )


def test_a_key_ttl_of_zero_means_rows_never_expire() -> None:
    assert (
        WriterSettings.from_env({"STREAMREC_FEATURE_WRITER_KEY_TTL_SECONDS": "0"}).key_ttl_seconds
        == 0
    )


def test_metrics_serve_on_the_fixed_loopback_port_unless_moved_or_off() -> None:
    settings = WriterSettings.from_env({})
    assert settings.metrics_port == METRICS_PORTS["writer"] == 9112
    assert settings.metrics_host == "127.0.0.1"
    env = {"STREAMREC_FEATURE_WRITER_METRICS_PORT": "0",
           "STREAMREC_FEATURE_WRITER_METRICS_HOST": "0.0.0.0"}  # fmt: skip
    moved = WriterSettings.from_env(env)
    assert (moved.metrics_port, moved.metrics_host) == (0, "0.0.0.0")
    flagged = settings_from(parse_args(["--metrics-port", "19112"]), env)
    assert flagged.metrics_port == 19112
    assert WriterSettings.variable("metrics_port") == PORT_VARIABLES["writer"]
