"""One variable in, Feast's placeholders out: ``STREAMREC_REDIS_URL`` to feature_store.yaml.

``feature_repo/feature_store.yaml`` reads ``${STREAMREC_FEAST_REDIS}`` (Feast's
``host:port,db=N,...`` connection string) and ``${STREAMREC_FEAST_REGISTRY}``.
Feast 0.67 expands them with ``os.path.expandvars`` (no defaults; an unset
variable stays literally ``${...}``), so this module derives both from the
variables users already set. Explicitly set values win.

``eval "$(python -m jobs.feature_writer.feast_env)"`` exports them for the
``feast`` CLI; :func:`load_store` uses them without touching ``os.environ``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml
from feast import FeatureStore, RepoConfig

from jobs.feature_writer.errors import SettingsError
from schemas.settings import DEFAULT_REDIS_URL, REDIS_URL_ENV

FEAST_REDIS_ENV = "STREAMREC_FEAST_REDIS"
FEAST_REGISTRY_ENV = "STREAMREC_FEAST_REGISTRY"
STACK_HOME_ENV = "STREAMREC_STACK_HOME"
CHECKOUT = Path(__file__).resolve().parents[2]
REPO_PATH = CHECKOUT / "feature_repo"
# os.path.expandvars' syntax: $name or ${name}; unknown names are left alone.
_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def feast_connection_string(redis_url: str) -> str:
    """``redis://[user:pass@]host:port/db`` as Feast's ``host:port,db=N[,...]``."""
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss"):
        raise SettingsError(f"{REDIS_URL_ENV} must be redis:// or rediss://, not {redis_url!r}")
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
    return ",".join(fields)


def feast_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The placeholder values feature_store.yaml needs, derived unless set explicitly."""
    env = os.environ if environ is None else environ
    stack_home = Path(env.get(STACK_HOME_ENV) or CHECKOUT / ".stack")
    derived = {
        FEAST_REDIS_ENV: feast_connection_string(env.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL),
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


def main() -> int:
    """Print ``export`` lines for the ``feast`` CLI (and create the registry's folder)."""
    values = feast_environment()
    Path(values[FEAST_REGISTRY_ENV]).parent.mkdir(parents=True, exist_ok=True)
    for name, value in values.items():
        sys.stdout.write(f"export {name}='{value}'\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
