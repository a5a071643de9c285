"""Finding (and, where we may, installing) the external programs the services run."""

from __future__ import annotations

import enum
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from jobs.localstack.errors import StackError

log = logging.getLogger(__name__)

Which = Callable[[str], str | None]
Runner = Callable[[list[str]], None]

# Debian installs here; sudo-less shells and cron jobs often lack /usr/sbin or
# /usr/bin on PATH, so look there before concluding it is missing.
_REDIS_FALLBACK = Path("/usr/bin/redis-server")


def find_java(environ: Mapping[str, str] | None = None, which: Which = shutil.which) -> str:
    """$JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH."""
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
        raise StackError(f"JAVA_HOME={java_home} has no executable bin/java; fix or unset it")
    found = which("java")
    if found is None:
        raise StackError(
            "java not found: Kafka needs a Java 17+ runtime. "
            "Install one, e.g. `apt-get install -y openjdk-17-jre-headless`, or set JAVA_HOME."
        )
    return found


def find_mvn(which: Which = shutil.which) -> str:
    found = which("mvn")
    if found is None:
        raise StackError(
            "mvn not found: the Kafka jars are fetched from Maven Central with Maven. "
            "Install it, e.g. `apt-get install -y maven`."
        )
    return found


class RedisPlan(enum.Enum):
    """What to do about redis-server; decided by a pure function so it can be unit tested."""

    USE = "use"
    APT_INSTALL = "apt-install"
    GIVE_UP = "give-up"


def redis_plan(found: str | None, is_root: bool, has_apt: bool) -> RedisPlan:
    if found is not None:
        return RedisPlan.USE
    # Installing system packages silently is only acceptable where nobody else is
    # asked for a password: root in a container or a CI machine with apt.
    if is_root and has_apt:
        return RedisPlan.APT_INSTALL
    return RedisPlan.GIVE_UP


def find_redis_server(which: Which = shutil.which, fallback: Path = _REDIS_FALLBACK) -> str | None:
    found = which("redis-server")
    if found is not None:
        return found
    return str(fallback) if os.access(fallback, os.X_OK) else None


def ensure_redis_server(
    which: Which = shutil.which,
    is_root: bool | None = None,
    run: Runner | None = None,
    fallback: Path = _REDIS_FALLBACK,
) -> str:
    """The path of redis-server, installing Debian's package first if we can.

    The lookups are parameters so tests can exercise the install branch on a
    machine that has redis-server.
    """
    found = find_redis_server(which, fallback)
    root = os.geteuid() == 0 if is_root is None else is_root
    plan = redis_plan(found, root, which("apt-get") is not None)
    if plan is RedisPlan.USE and found is not None:
        return found
    if plan is RedisPlan.GIVE_UP:
        raise StackError(
            "redis-server not found. Install it, e.g. `sudo apt-get install -y redis-server` "
            "(Debian/Ubuntu) or `brew install redis`, then run again."
        )
    # WARNING, not INFO: without logging configured (the Python API) it still shows,
    # and a user should know we changed their system.
    log.warning("redis-server not found; installing Debian's package with apt-get")
    runner = run or _run_apt
    runner(["apt-get", "update", "-qq"])
    runner(["apt-get", "install", "-y", "-qq", "redis-server"])
    installed = find_redis_server(which, fallback)
    if installed is None:
        raise StackError("apt-get install redis-server finished but redis-server is still missing")
    return installed


# Another apt (an unattended upgrade, a second stack starting) may hold apt's locks;
# waiting for it beats failing the whole start.
APT_LOCK_WAIT_S = 300.0


def _run_apt(argv: list[str]) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + APT_LOCK_WAIT_S
    while True:
        result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if "Could not get lock" not in result.stderr or time.monotonic() > deadline:
            break
        log.warning("%s waits for another apt to release its lock", " ".join(argv))
        time.sleep(5)
    if result.returncode != 0:
        raise StackError(
            f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr[-2000:]}"
        )
