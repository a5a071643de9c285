"""The secured mode's CA and credentials: made once, private, valid for loopback."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from jobs.localstack.credentials import KAFKA_USERS, REDIS_USERS, ensure_credentials
from jobs.localstack.tls import ensure_certificates


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_server_certificate_is_signed_by_the_ca_for_the_loopback_address(
    tmp_path: Path,
) -> None:
    files = ensure_certificates(tmp_path / "secrets")
    verify = ["openssl", "verify", "-CAfile", str(files.ca_cert), "-verify_ip", "127.0.0.1"]
    result = subprocess.run([*verify, str(files.server_cert)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    wrong = subprocess.run(
        [*verify[:-2], "-verify_ip", "10.0.0.1", str(files.server_cert)], capture_output=True
    )
    assert wrong.returncode != 0


def test_keys_and_the_folder_are_private_and_made_only_once(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    files = ensure_certificates(folder)
    first = files.server_cert.read_bytes()
    assert _mode(folder) == 0o700
    assert _mode(files.server_key) == 0o600 and _mode(files.server_keystore) == 0o600
    assert ensure_certificates(folder).server_cert.read_bytes() == first


def test_credentials_are_random_private_and_stable(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    credentials = ensure_credentials(folder)
    assert set(credentials.kafka) == set(KAFKA_USERS)
    assert set(credentials.redis) == set(REDIS_USERS)
    assert len(set(credentials.secrets())) == len(credentials.secrets())
    assert all(len(secret) >= 24 for secret in credentials.secrets())
    assert _mode(folder / "credentials.json") == 0o600
    assert ensure_credentials(folder) == credentials
    assert ensure_credentials(tmp_path / "other") != credentials
