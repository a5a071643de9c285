"""The one way settings are read: environment, flags over it, typed, validated, masked."""

from __future__ import annotations

import argparse
import importlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runtime.kafka import KafkaSettings
from runtime.settings import (
    Settings,
    SettingsError,
    group,
    mask_properties,
    mask_url,
    model_dir,
    redis_url,
    setting,
    variables,
)

REPO = Path(__file__).resolve().parents[2]


class ToyError(RuntimeError):
    """A role's own error, as the roles' settings raise theirs."""


@dataclass(frozen=True)
class Toy(Settings):
    error = ToyError

    kafka: KafkaSettings = group(KafkaSettings)
    name: str = setting("toy", env="STREAMREC_TOY_NAME", help="a name")
    count: int = setting(3, env="STREAMREC_TOY_COUNT", help="a count")
    ratio: float = setting(0.5, env="STREAMREC_TOY_RATIO", help="a ratio (50%)")
    on: bool = setting(False, env="STREAMREC_TOY_ON", help="a switch")
    folder: Path = setting(Path("x"), env="STREAMREC_TOY_FOLDER", help="a folder")
    ttl: int | None = setting(None, env="STREAMREC_TOY_TTL", help="unset = none")
    tags: tuple[str, ...] = setting(("a", "b"), env="STREAMREC_TOY_TAGS", help="tags")
    topic: str = setting("t", env="STREAMREC_TOY_TOPIC", help="'' = off", empty=True)
    url: str = setting(
        "redis://h:1/0", env="STREAMREC_TOY_URL", flag="--toy-url", help="a store", secret=True
    )
    token: str = setting("", env="STREAMREC_TOY_TOKEN", help="a credential", secret=True)
    plain: tuple[Path, ...] = field(default=())  # not a setting: only the caller sets it

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ToyError(f"{self.variable('count')} must be at least 1")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    Toy.add_flags(parser)
    return parser.parse_args(argv)


def test_defaults_when_nothing_is_set() -> None:
    toy = Toy.load({})
    assert toy == Toy()
    assert toy.kafka.bootstrap_servers == "127.0.0.1:9092"


def test_environment_is_converted_to_each_fields_type() -> None:
    env = {
        "STREAMREC_TOY_NAME": " n ",
        "STREAMREC_TOY_COUNT": "7",
        "STREAMREC_TOY_RATIO": "0.25",
        "STREAMREC_TOY_ON": "yes",
        "STREAMREC_TOY_FOLDER": "/data",
        "STREAMREC_TOY_TTL": "60",
        "STREAMREC_TOY_TAGS": "c, d,,",
        "STREAMREC_TOY_TOPIC": "",
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": "k:1",
        "STREAMREC_KAFKA_CONFIG": "acks=all, linger.ms=5",
    }
    toy = Toy.load(env)
    assert (toy.name, toy.count, toy.ratio, toy.on) == ("n", 7, 0.25, True)
    assert (toy.folder, toy.ttl, toy.tags, toy.topic) == (Path("/data"), 60, ("c", "d"), "")
    assert toy.kafka == KafkaSettings("k:1", {"acks": "all", "linger.ms": "5"})


def test_an_empty_variable_means_unset_unless_empty_is_a_value() -> None:
    toy = Toy.load({"STREAMREC_TOY_COUNT": " ", "STREAMREC_TOY_TTL": ""})
    assert (toy.count, toy.ttl) == (3, None)


def test_flags_win_over_the_environment() -> None:
    env = {"STREAMREC_TOY_COUNT": "7", "STREAMREC_TOY_ON": "true", "STREAMREC_TOY_NAME": "env"}
    args = parse(["--count", "9", "--no-on", "--bootstrap-servers", "k:2", "--toy-url", "r://x"])
    toy = Toy.load(env, args)
    assert (toy.count, toy.on, toy.name, toy.url) == (9, False, "env", "r://x")
    assert toy.kafka.bootstrap_servers == "k:2"


def test_computed_defaults_give_way_to_the_environment() -> None:
    assert Toy.load({}, plain=(Path("j"),), count=5).count == 5
    assert Toy.load({"STREAMREC_TOY_COUNT": "6"}, count=5).count == 6
    assert Toy.load({}, plain=(Path("j"),)).plain == (Path("j"),)


@pytest.mark.parametrize(
    ("env", "argv", "named"),
    [
        ({"STREAMREC_TOY_COUNT": "many"}, [], "STREAMREC_TOY_COUNT='many' is not an integer"),
        ({"STREAMREC_TOY_RATIO": "half"}, [], "STREAMREC_TOY_RATIO='half' is not a number"),
        ({"STREAMREC_TOY_ON": "maybe"}, [], "STREAMREC_TOY_ON='maybe' is not true or false"),
        ({"STREAMREC_KAFKA_CONFIG": "acks"}, [], "STREAMREC_KAFKA_CONFIG"),
        ({}, ["--count", "x"], "--count='x' is not an integer"),
        ({"STREAMREC_TOY_COUNT": "0"}, [], "STREAMREC_TOY_COUNT must be at least 1"),
    ],
)
def test_bad_values_raise_the_roles_error_naming_the_variable(
    env: dict[str, str], argv: list[str], named: str
) -> None:
    with pytest.raises(ToyError, match=named.replace("[", r"\[")):
        Toy.load(env, parse(argv))


def test_a_secret_bad_value_is_not_echoed() -> None:
    with pytest.raises(ToyError) as raised:
        Toy.load({"STREAMREC_KAFKA_CONFIG": "sasl.password=hunter2,oops"})
    assert "hunter2" not in str(raised.value)


def test_mask_url_hides_only_the_password() -> None:
    assert mask_url("redis://u:s3cret@host:6380/1") == "redis://u:***@host:6380/1"
    assert mask_url("rediss://:pw@h/0") == "rediss://:***@h/0"
    assert mask_url("redis://host:6380/1") == "redis://host:6380/1"
    assert mask_url("127.0.0.1:8001") == "127.0.0.1:8001"


def test_mask_properties_hides_credential_like_names() -> None:
    masked = mask_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.password": "a",
            "sasl.jaas.config": "b",
            "sasl.oauthbearer.config": "c",
            "ssl.key.password": "d",
            "client.secret": "e",
            "api.token": "f",
        }
    )
    assert masked.pop("security.protocol") == "SASL_SSL"
    assert set(masked.values()) == {"***"}


def test_describe_masks_every_secret() -> None:
    toy = Toy(
        kafka=KafkaSettings("k:1", {"sasl.password": "kpw", "acks": "all"}),
        url="redis://u:upw@h:1/0",
        token="sekrit-3",
    )
    line = toy.describe()
    for secret in ("kpw", "upw", "sekrit"):
        assert secret not in line
    assert "acks=all" in line and "redis://u:***@h:1/0" in line and "count=3" in line


def test_help_names_each_variable_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        parse(["--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for variable in variables(Toy).values():
        assert variable in out
    assert "[STREAMREC_TOY_COUNT, default 3]" in out
    assert "(50%)" in out  # a literal % in help text survives argparse's formatting
    assert "default redis://h:1/0" in out


def test_shared_defaults_keep_their_names() -> None:
    assert model_dir({}) == Path(".cache/ranker")
    assert model_dir({"STREAMREC_MODEL_DIR": "/m"}) == Path("/m")
    assert redis_url({}) == "redis://127.0.0.1:6379/0"
    assert issubclass(SettingsError, ValueError)


# --- every role ----------------------------------------------------------------------


def console_scripts() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    scripts: dict[str, str] = project["project"]["scripts"]
    return scripts


def run_help(target: str, capsys: pytest.CaptureFixture[str]) -> str:
    module, _, name = target.partition(":")
    main = getattr(importlib.import_module(module), name)
    try:
        code = main(["--help"])
    except SystemExit as exit_:
        code = exit_.code
    assert code in (0, None), f"{target} --help exited {code}"
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("script", sorted(console_scripts()))
def test_every_console_script_answers_help(script: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert script.startswith("streamrec-")
    assert "STREAMREC_" in run_help(console_scripts()[script], capsys)


def _role_settings() -> dict[str, list[type]]:
    from inference.serving.settings import ServingSettings
    from inference.worker.settings import WorkerSettings
    from jobs.demo.cli import DemoSettings
    from jobs.drift.settings import DriftSettings
    from jobs.feature_writer.settings import WriterSettings
    from jobs.features.settings import FeatureJobSettings
    from jobs.features.submit import SubmitSettings
    from jobs.ranker.settings import TrainSettings

    return {
        "streamrec-worker": [WorkerSettings],
        "streamrec-features": [FeatureJobSettings],
        "streamrec-features-submit": [SubmitSettings, FeatureJobSettings],
        "streamrec-feature-writer": [WriterSettings],
        "streamrec-drift": [DriftSettings],
        "streamrec-serving": [ServingSettings],
        "streamrec-train": [TrainSettings],
        "streamrec-demo": [DemoSettings],
        "streamrec-replay": [KafkaSettings],
    }


@pytest.mark.parametrize(
    "script",
    [
        "streamrec-worker",
        "streamrec-features",
        "streamrec-features-submit",
        "streamrec-feature-writer",
        "streamrec-drift",
        "streamrec-serving",
        "streamrec-train",
        "streamrec-demo",
        "streamrec-replay",
    ],
)
def test_help_lists_every_variable_of_the_role(
    script: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_help(console_scripts()[script], capsys)
    wanted: Mapping[str, Any] = {
        variable: cls for cls in _role_settings()[script] for variable in variables(cls).values()
    }
    missing = [variable for variable in wanted if variable not in out]
    assert not missing, f"{script} --help does not list {missing}"
