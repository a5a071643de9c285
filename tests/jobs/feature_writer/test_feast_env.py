"""One Redis URL in, feature_store.yaml's placeholders out; the repo's config loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs.feature_writer.errors import SettingsError
from jobs.feature_writer.feast_env import (
    FEAST_REDIS_ENV,
    FEAST_REDIS_TYPE_ENV,
    FEAST_REGISTRY_ENV,
    expand,
    feast_connection_string,
    feast_environment,
    load_config,
)
from schemas.views import KEY_TTL_SECONDS


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "127.0.0.1:6379,db=0"),
        ("redis://cache:7000", "cache:7000,db=0"),
        ("redis://u:p%40ss@cache:7000/2", "cache:7000,db=2,username=u,password=p@ss"),
        ("rediss://:pw@cache/1", "cache:6379,db=1,password=pw,ssl=true"),
        (
            "rediss://reader:pw@cache:6380/0?ssl_ca_certs=/s/ca.pem",
            "cache:6380,db=0,username=reader,password=pw,ssl=true,ssl_ca_certs=/s/ca.pem",
        ),
        ("redis+cluster://a:7000,b:7001", "a:7000,b:7001"),
        (
            "rediss+cluster://u:pw@a:7000?ssl_ca_certs=/ca.pem",
            "a:7000,username=u,password=pw,ssl=true,ssl_ca_certs=/ca.pem",
        ),
    ],
)
def test_connection_string(url: str, expected: str) -> None:
    assert feast_connection_string(url) == expected


def test_unusable_urls_are_refused() -> None:
    with pytest.raises(SettingsError):
        feast_connection_string("http://x")
    with pytest.raises(SettingsError):
        feast_connection_string("redis://:a,b@x/0")
    with pytest.raises(SettingsError, match="database 0 only"):
        feast_connection_string("redis+cluster://a:7000/2")


def test_derived_unless_set(tmp_path: Path) -> None:
    env = {"STREAMREC_REDIS_URL": "redis://h:1/4", "STREAMREC_STACK_HOME": str(tmp_path)}
    assert feast_environment(env) == {
        FEAST_REDIS_ENV: "h:1,db=4",
        FEAST_REDIS_TYPE_ENV: "redis",
        FEAST_REGISTRY_ENV: str(tmp_path / "feast" / "registry.db"),
    }
    explicit = {**env, FEAST_REDIS_ENV: "x:2,db=0"}
    assert feast_environment(explicit)[FEAST_REDIS_ENV] == "x:2,db=0"


def test_expand_mirrors_os_path_expandvars() -> None:
    text = "a: ${A}\nb: $B\nc: ${MISSING}\nd: $$"
    variables = {"A": "1", "B": "2"}
    assert expand(text, variables) == "a: 1\nb: 2\nc: ${MISSING}\nd: $$"
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(variables)
        assert expand(text, variables) == os.path.expandvars(text)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_repo_config_loads_with_one_variable(tmp_path: Path) -> None:
    env = {"STREAMREC_REDIS_URL": "redis://h:1/4", "STREAMREC_STACK_HOME": str(tmp_path)}
    config = load_config(environ=env)
    assert config.project == "streamrec"
    assert config.online_store.connection_string == "h:1,db=4"
    assert config.registry.path == str(tmp_path / "feast" / "registry.db")
    assert config.entity_key_serialization_version == 3
    assert config.online_store.key_ttl_seconds == KEY_TTL_SECONDS  # the writer's default
    assert (tmp_path / "feast").is_dir()


def test_a_cluster_url_configures_feast_for_a_cluster(tmp_path: Path) -> None:
    env = {"STREAMREC_REDIS_URL": "redis+cluster://h:1,h:2", "STREAMREC_STACK_HOME": str(tmp_path)}
    config = load_config(environ=env)
    assert config.online_store.redis_type == "redis_cluster"
    assert config.online_store.connection_string == "h:1,h:2"
