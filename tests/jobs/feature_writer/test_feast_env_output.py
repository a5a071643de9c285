"""What ``python -m jobs.feature_writer.feast_env`` prints never holds the Redis password."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.feature_writer import feast_env
from jobs.feature_writer.errors import SettingsError

PASSWORD = "r3dis-Pa55"
URL = f"rediss://app:{PASSWORD}@cache:6380/2"
MAKEFILE = Path(__file__).resolve().parents[3] / "Makefile"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STREAMREC_REDIS_URL", URL)
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    monkeypatch.delenv(feast_env.FEAST_REDIS_ENV, raising=False)
    monkeypatch.delenv(feast_env.FEAST_REGISTRY_ENV, raising=False)


def test_showing_the_values_masks_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert feast_env.main([]) == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out
    assert f"{feast_env.FEAST_REDIS_ENV}=cache:6380,db=2,username=app,password=***,ssl=true" in out


def test_apply_passes_the_environment_as_a_dict_and_masks_feasts_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, str] = {}

    def run(args: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        env = options["env"]
        assert isinstance(env, dict) and "shell" not in options
        seen.update(env)
        return subprocess.CompletedProcess(args, 1, f"connecting password={PASSWORD}\n", URL)

    monkeypatch.setattr(subprocess, "run", run)
    assert feast_env.main(["apply"]) == 1
    printed = capsys.readouterr()
    assert PASSWORD not in printed.out + printed.err
    assert "password=***" in printed.out
    assert f"password={PASSWORD}" in seen[feast_env.FEAST_REDIS_ENV]  # feast itself gets it


def test_a_refused_url_is_named_without_its_password() -> None:
    with pytest.raises(SettingsError) as raised:
        feast_env.feast_connection_string(f"http://u:{PASSWORD}@h/0")
    assert PASSWORD not in str(raised.value)


def test_make_feast_apply_evaluates_no_shell_text() -> None:
    recipe = MAKEFILE.read_text().split("\nfeast-apply:", 1)[1].split("\n\n", 1)[0]
    assert "eval" not in recipe
    assert "jobs.feature_writer.feast_env apply" in recipe
