"""The secured mode's rendered files and argv: Redis config and ACL file, Triton flags, env."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from jobs.localstack import StackSettings
from jobs.localstack.credentials import FILE_NAME, ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.redis_acl import key_patterns, render_acl_file
from jobs.localstack.redis_server import RedisService, redis_url_for, render_redis_conf
from jobs.localstack.tls import TlsFiles
from jobs.localstack.triton_server import (
    TritonService,
    control_env,
    inference_env,
    secured_args,
)

PASSWORDS = {"admin": "a-pw", "writer": "w-pw", "reader": "r-pw", "router": "x-pw"}


def _settings(tmp_path: Path, secure: bool) -> StackSettings:
    return StackSettings(
        home=tmp_path / "home", cache_dir=tmp_path / "cache", redis_port=16390, secure=secure
    )


def test_plaintext_redis_conf_is_unchanged(tmp_path: Path) -> None:
    conf = render_redis_conf(_settings(tmp_path, False), tmp_path)
    assert "port 16390\n" in conf and "tls" not in conf and "aclfile" not in conf


def test_secured_redis_conf_listens_with_tls_only(tmp_path: Path) -> None:
    tls = TlsFiles.under(tmp_path / "secrets")
    conf = render_redis_conf(_settings(tmp_path, True), tmp_path, tls).splitlines()
    assert "port 0" in conf and "tls-port 16390" in conf and "bind 127.0.0.1" in conf
    assert f'tls-cert-file "{tls.server_cert}"' in conf
    assert f'tls-ca-cert-file "{tls.ca_cert}"' in conf
    assert f'aclfile "{tmp_path / "users.acl"}"' in conf
    assert not any("pw" in line for line in conf)


def test_acl_file_disables_default_and_holds_digests_only() -> None:
    text = render_acl_file(PASSWORDS)
    lines = {line.split()[1]: line for line in text.splitlines()}
    assert lines["default"].startswith("user default off")
    for user, password in PASSWORDS.items():
        assert f"#{hashlib.sha256(password.encode()).hexdigest()}" in lines[user]
        assert password not in text
    assert "+@all" in lines["admin"] and "~*" in lines["admin"]
    assert "+hset" in lines["writer"] and "+evalsha" in lines["writer"]
    assert "~streamrec:* ~*streamrec" in lines["reader"]
    root, _, selector = lines["reader"].partition("(")
    assert "+@read" in root and "+hset" not in root
    # Its one write: the routing acknowledgements, through a selector of their own.
    assert selector == r"~streamrec:routing:*:acks +hset +hdel +pexpire)"
    # The canary's user: the routing keys and nothing else, not even the features.
    assert "~streamrec:routing:*" in lines["router"] and "~streamrec:* " not in lines["router"]
    assert "+set" in lines["router"] and "+hget " not in lines["router"]
    assert "+hgetall" in lines["router"]


def test_credentials_of_an_older_stack_gain_the_new_users_and_keep_the_rest(
    tmp_path: Path,
) -> None:
    first = ensure_credentials(tmp_path)
    path = tmp_path / FILE_NAME
    stored = json.loads(path.read_text())
    del stored["redis"]["router"]
    path.write_text(json.dumps(stored))
    again = ensure_credentials(tmp_path)
    assert again.redis["router"] and again.redis["reader"] == first.redis["reader"]
    assert again.kafka == first.kafka
    assert path.stat().st_mode & 0o777 == 0o600


def test_key_patterns_escape_glob_characters() -> None:
    assert key_patterns("a*b") == "~a\\*b:* ~*a\\*b"


def test_redis_urls_per_user(tmp_path: Path) -> None:
    plain = _settings(tmp_path, False)
    assert redis_url_for(plain, "reader") == plain.redis_url
    secured = _settings(tmp_path, True)
    url = redis_url_for(secured, "reader")
    ca = secured.secrets_dir / "ca.pem"
    assert url.startswith("rediss://reader:") and url.endswith(f":16390/0?ssl_ca_certs={ca}")
    assert (secured.secrets_dir / "credentials.json").stat().st_mode & 0o077 == 0
    with pytest.raises(StackError, match="no Redis user"):
        redis_url_for(secured, "nobody")
    assert RedisService(secured).exports() == {}


def test_secured_triton_flags(tmp_path: Path) -> None:
    tls = TlsFiles.under(tmp_path)
    argv = secured_args(tls, "k3y")
    assert "--grpc-use-ssl=true" in argv
    assert f"--grpc-server-cert={tls.server_cert}" in argv
    assert f"--grpc-server-key={tls.server_key}" in argv
    grpc = next(a for a in argv if a.startswith("--grpc-restricted-protocol="))
    protocols, header = grpc.split("=", 1)[1].split(":")
    assert "model-repository" in protocols.split(",") and "inference" not in protocols
    assert header == "streamrec-control-key=k3y"
    http = next(a for a in argv if a.startswith("--http-restricted-api="))
    assert {"model-repository", "inference"} <= set(http.split("=", 1)[1].split(":")[0].split(","))
    assert "health" not in http


def test_triton_command_and_env_per_mode(tmp_path: Path) -> None:
    plain = _settings(tmp_path, False)
    assert not any("ssl" in a for a in TritonService(plain).command())
    assert inference_env(plain) == {"STREAMREC_TRITON_URL": plain.triton_grpc_url}
    assert "STREAMREC_TRITON_CONTROL_KEY" not in control_env(plain)
    secured = _settings(tmp_path, True)
    assert "--grpc-use-ssl=true" in TritonService(secured).command()
    assert inference_env(secured)["STREAMREC_TRITON_TLS_CA"] == str(secured.secrets_dir / "ca.pem")
    key = control_env(secured)["STREAMREC_TRITON_CONTROL_KEY"]
    assert key and key not in " ".join(TritonService(secured).exports().values())
