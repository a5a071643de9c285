"""One variable in, Feast's placeholders out: ``STREAMREC_REDIS_URL`` to feature_store.yaml.

``feature_repo/feature_store.yaml`` reads ``${STREAMREC_FEAST_REDIS}`` (Feast's
``host:port,db=N,...`` connection string), ``${STREAMREC_FEAST_REDIS_TYPE}``
(``redis``, or ``redis_cluster`` for a ``redis+cluster://`` URL) and
``${STREAMREC_FEAST_REGISTRY}``.
Feast 0.67 expands them with ``os.path.expandvars`` (no defaults; an unset
variable stays literally ``${...}``), so this module derives both from the
variables users already set. Explicitly set values win.

``python -m jobs.feature_writer.feast_env apply`` runs ``feast apply`` with them
in its environment (passed as a dict: no shell ever sees the Redis password), and
:func:`load_store` uses them without touching ``os.environ``. With no command it
prints them, the password masked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml
from feast import FeatureStore, RepoConfig

from jobs.feature_writer.errors import SettingsError
from runtime.online.connect import is_cluster_url, parse_cluster_url
from runtime.redact import redact
from runtime.settings import DEFAULT_REDIS_URL, MASK, REDIS_URL_ENV, mask_url, secret_texts

FEAST_REDIS_ENV = "STREAMREC_FEAST_REDIS"
FEAST_REDIS_TYPE_ENV = "STREAMREC_FEAST_REDIS_TYPE"
FEAST_REGISTRY_ENV = "STREAMREC_FEAST_REGISTRY"
STACK_HOME_ENV = "STREAMREC_STACK_HOME"
CHECKOUT = Path(__file__).resolve().parents[2]
REPO_PATH = CHECKOUT / "feature_repo"
# os.path.expandvars' syntax: $name or ${name}; unknown names are left alone.
_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def feast_redis_type(redis_url: str) -> str:
    """Feast's ``redis_type`` for the store behind ``redis_url``."""
    return "redis_cluster" if is_cluster_url(redis_url) else "redis"


def feast_connection_string(redis_url: str) -> str:
    """``redis://[user:pass@]host:port/db`` as Feast's ``host:port,db=N[,...]``; a
    ``redis+cluster://`` URL as ``host:port,host:port[,...]`` (a cluster has no db)."""
    if is_cluster_url(redis_url):
        return _cluster_connection_string(redis_url)
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss"):
        shown = mask_url(redis_url)  # the URL's password stays out of the message
        raise SettingsError(
            f"{REDIS_URL_ENV} must be redis://, rediss://, redis+cluster:// or "
            f"rediss+cluster://, not {shown!r}"
        )
    db = parts.path.strip("/") or "0"
    fields = [f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}", f"db={db}"]
    if parts.username:
        fields.append(f"username={unquote(parts.username)}")
    if parts.password:
        # Feast splits on commas and json-decodes values: a password with a comma cannot pass.
        if "," in unquote(parts.password):
            raise SettingsError("Feast's connection string cannot carry a password with ','")
        fields.append(f"password={unquote(parts.password)}")
    if parts.scheme == "rediss":
        fields.append("ssl=true")
    # Feast hands the fields to redis.Redis as keyword arguments, so the URL's query
    # (``ssl_ca_certs=<ca.pem>`` of a secured store) reaches the client the same way.
    for name, value in parse_qsl(parts.query):
        if "," in value or "," in name:
            raise SettingsError(f"Feast's connection string cannot carry ',' in {name!r}")
        fields.append(f"{name}={value}")
    return ",".join(fields)


def _cluster_connection_string(redis_url: str) -> str:
    try:
        address = parse_cluster_url(redis_url)
    except ValueError as exc:
        raise SettingsError(f"{REDIS_URL_ENV}: {exc}") from exc
    fields = [f"{host}:{port}" for host, port in address.nodes]
    if address.username:
        fields.append(f"username={address.username}")
    if address.password:
        if "," in address.password:
            raise SettingsError("Feast's connection string cannot carry a password with ','")
        fields.append(f"password={address.password}")
    if address.tls:
        fields.append("ssl=true")
    if address.ssl_ca_certs:
        fields.append(f"ssl_ca_certs={address.ssl_ca_certs}")
    return ",".join(fields)


def feast_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The placeholder values feature_store.yaml needs, derived unless set explicitly."""
    env = os.environ if environ is None else environ
    stack_home = Path(env.get(STACK_HOME_ENV) or CHECKOUT / ".stack")
    redis_url = env.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL
    derived = {
        FEAST_REDIS_ENV: feast_connection_string(redis_url),
        FEAST_REDIS_TYPE_ENV: feast_redis_type(redis_url),
        FEAST_REGISTRY_ENV: str(stack_home / "feast" / "registry.db"),
    }
    return {name: env.get(name) or value for name, value in derived.items()}


def expand(text: str, variables: Mapping[str, str]) -> str:
    """``os.path.expandvars`` over ``variables`` instead of the process environment."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1).strip("{}")
        return variables.get(name, match.group(0))

    return _VAR.sub(value, text)


def load_config(
    repo_path: Path | None = None, environ: Mapping[str, str] | None = None
) -> RepoConfig:
    """feature_store.yaml with its placeholders filled from :func:`feast_environment`."""
    repo = (repo_path or REPO_PATH).resolve()
    env = os.environ if environ is None else environ
    variables = {**env, **feast_environment(env)}
    raw = yaml.safe_load(expand((repo / "feature_store.yaml").read_text(), variables))
    config = RepoConfig(**raw)
    config.repo_path = repo
    Path(config.registry.path).parent.mkdir(parents=True, exist_ok=True)
    return config


def load_store(
    repo_path: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> FeatureStore:
    """A ``FeatureStore`` on this repository, configured from the environment."""
    repo = Path(repo_path) if repo_path is not None else REPO_PATH
    config = load_config(repo, environ)
    return FeatureStore(repo_path=str(config.repo_path), config=config)


def feast_apply(
    repo_path: Path | None = None, environ: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real ``feast apply`` CLI in the repository, placeholders filled from ``environ``."""
    env = dict(os.environ if environ is None else environ)
    env.update(feast_environment(env))
    Path(env[FEAST_REGISTRY_ENV]).parent.mkdir(parents=True, exist_ok=True)
    feast = Path(sys.executable).parent / "feast"
    return subprocess.run([str(feast), "apply"], cwd=repo_path or REPO_PATH, env=env,
                          capture_output=True, text=True, timeout=180)  # fmt: skip


def _is_password(field: str) -> bool:
    return field.startswith("password=")


def masked_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`feast_environment` fit to print: the connection string's password masked."""
    values = feast_environment(environ)
    fields = values[FEAST_REDIS_ENV].split(",")
    masked = [f"password={MASK}" if _is_password(field) else field for field in fields]
    return values | {FEAST_REDIS_ENV: ",".join(masked)}


def redis_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """The Redis password in every form Feast's output could show it."""
    env = os.environ if environ is None else environ
    found = secret_texts(env.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL)
    fields = feast_environment(env)[FEAST_REDIS_ENV].split(",")
    return found | {field.removeprefix("password=") for field in fields if _is_password(field)}


def main(argv: list[str] | None = None) -> int:
    """``apply``: run ``feast apply`` configured from the environment; else show the values.

    ``feast apply``'s own output is passed on with the Redis password masked.
    """
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["apply"]):
        print("usage: python -m jobs.feature_writer.feast_env [apply]", file=sys.stderr)
        return 2
    try:
        if not args:
            for name, value in masked_environment().items():
                print(f"{name}={value}")
            return 0
        done = feast_apply()
    except SettingsError as exc:
        print(f"feast_env: {exc}", file=sys.stderr)
        return 2
    secrets = redis_secrets()
    sys.stdout.write(redact(done.stdout, secrets))
    sys.stderr.write(redact(done.stderr, secrets))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
