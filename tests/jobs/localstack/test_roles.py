"""Each role's variables: one endpoint set in plaintext, its own principals when secured."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from jobs.localstack.cli import write_env
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.roles import ROLES, role_env
from jobs.localstack.settings import StackSettings
from runtime.settings import parse_properties


def _settings(tmp_path: Path, secure: bool) -> StackSettings:
    return StackSettings(home=tmp_path / "stack", cache_dir=tmp_path / "cache", secure=secure)


def test_plaintext_roles_hold_no_secret_and_may_be_printed(tmp_path: Path) -> None:
    settings = _settings(tmp_path, secure=False)
    env = role_env(settings, "worker")
    assert env["STREAMREC_REDIS_URL"] == settings.redis_url
    assert "STREAMREC_KAFKA_CONFIG" not in env
    assert "STREAMREC_REDIS_URL=redis://127.0.0.1:6379/0" in write_env(settings, "worker", None)


def test_secured_roles_get_their_own_principals(tmp_path: Path) -> None:
    settings = _settings(tmp_path, secure=True)
    worker = role_env(settings, "worker")
    kafka = parse_properties(worker["STREAMREC_KAFKA_CONFIG"])
    assert kafka["sasl.username"] == "worker" and kafka["security.protocol"] == "SASL_SSL"
    assert worker["STREAMREC_REDIS_URL"].startswith("rediss://reader:")
    assert "STREAMREC_TRITON_CONTROL_KEY" not in worker
    writer = role_env(settings, "writer")
    assert writer["STREAMREC_REDIS_URL"].startswith("rediss://writer:")
    control_key = ensure_credentials(settings.secrets_dir).triton_control_key
    assert role_env(settings, "serving")["STREAMREC_TRITON_CONTROL_KEY"] == control_key
    assert not any(control_key in value for r in ROLES if r not in {"serving", "admin"}
                   for value in role_env(settings, r).values())  # fmt: skip


def test_secured_variables_go_only_to_a_private_file(tmp_path: Path) -> None:
    settings = _settings(tmp_path, secure=True)
    with pytest.raises(StackError, match="--out"):
        write_env(settings, "worker", None)
    out = tmp_path / "worker.env"
    out.write_text("old")
    out.chmod(0o644)
    said = write_env(settings, "worker", out)
    password = ensure_credentials(settings.secrets_dir).kafka["worker"]
    assert password not in said and password in out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_an_unknown_role_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="worker"):
        role_env(_settings(tmp_path, secure=False), "wroker")
