"""Prometheus's programs (``prometheus``, ``promtool``), fetched from Debian's package where we may.

Both ship in Debian's ``prometheus`` package. Installing that package would also
enable and start a Prometheus server (prometheus.service, port 9090) on a machine
with systemd and pull a dozen web-UI packages, so it is not installed: ``apt-get
download`` fetches the package and ``dpkg-deb -x`` unpacks it into a cache folder,
from which only the two static Go programs are kept. Nothing outside the cache
changes, except apt's package lists when they are missing (``apt-get update``, as
root only). A program on PATH or already installed by the system wins.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from jobs.localstack.errors import StackError
from runtime.settings import cache_dir

PACKAGE = "prometheus"
PROGRAMS = ("prometheus", "promtool")
# Another apt (an unattended upgrade, a second test run) may hold apt's locks.
APT_LOCK_WAIT_S = 300.0

Which = Callable[[str], str | None]
Runner = Callable[[list[str], Path], None]


class FetchPlan(enum.Enum):
    """What to do about a missing program; a pure function decides, so tests cover each branch."""

    USE = "use"
    DOWNLOAD = "download"
    UPDATE_AND_DOWNLOAD = "update-and-download"
    GIVE_UP = "give-up"


def fetch_plan(found: str | None, has_apt: bool, has_lists: bool, is_root: bool) -> FetchPlan:
    if found is not None:
        return FetchPlan.USE
    if not has_apt:
        return FetchPlan.GIVE_UP
    if has_lists:
        return FetchPlan.DOWNLOAD  # apt-get download needs no root
    # Refreshing the package lists changes the system: root only (a container, CI).
    return FetchPlan.UPDATE_AND_DOWNLOAD if is_root else FetchPlan.GIVE_UP


def default_cache() -> Path:
    # Absolute: callers run the program from other working directories.
    return (cache_dir() / "prometheus").resolve()


def find_program(
    name: str, which: Which = shutil.which, cache: Path | None = None, system: Path = Path("/")
) -> str | None:
    """``name`` on PATH, then where Debian's package installs it, then the cache's copy."""
    found = which(name)
    if found is not None:
        return found
    cache = default_cache() if cache is None else cache
    for candidate in (system / "usr/bin" / name, cache / "usr/bin" / name):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def apt_lists_present(lists: Path = Path("/var/lib/apt/lists")) -> bool:
    """Whether apt knows any package index (a fresh container image has none)."""
    if not lists.is_dir():
        return False
    return any(p.name.endswith("_Packages") or "_Packages." in p.name for p in lists.iterdir())


def ensure_program(
    name: str,
    which: Which = shutil.which,
    is_root: bool | None = None,
    has_lists: bool | None = None,
    run: Runner | None = None,
    cache: Path | None = None,
    system: Path = Path("/"),
) -> str:
    """The path of ``name`` (one of :data:`PROGRAMS`), fetching Debian's package first if we can."""
    if name not in PROGRAMS:
        raise ValueError(f"{name!r} is not in the {PACKAGE} package's {PROGRAMS}")
    cache = default_cache() if cache is None else cache
    found = find_program(name, which, cache, system)
    root = os.geteuid() == 0 if is_root is None else is_root
    lists = apt_lists_present() if has_lists is None else has_lists
    has_apt = which("apt-get") is not None and which("dpkg-deb") is not None
    plan = fetch_plan(found, has_apt, lists, root)
    if plan is FetchPlan.USE and found is not None:
        return found
    if plan is FetchPlan.GIVE_UP:
        raise StackError(
            f"{name} not found. Install Prometheus, e.g. `sudo apt-get install -y "
            f"--no-install-recommends {PACKAGE}` (Debian/Ubuntu; it also starts a Prometheus "
            "service) or a release from the Prometheus project, put it on PATH, and run again."
        )
    _download(plan, run or _run_apt, cache)
    installed = cache / "usr/bin" / name
    if not os.access(installed, os.X_OK):
        raise StackError(f"the {PACKAGE} package was unpacked, but it has no usr/bin/{name}")
    return str(installed)


def _download(plan: FetchPlan, runner: Runner, cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    if plan is FetchPlan.UPDATE_AND_DOWNLOAD:
        runner(["apt-get", "update", "-qq"], cache)
    for stale in cache.glob(f"{PACKAGE}_*.deb"):
        stale.unlink()
    runner(["apt-get", "download", "-qq", PACKAGE], cache)
    packages = sorted(cache.glob(f"{PACKAGE}_*.deb"))
    if not packages:
        raise StackError(f"apt-get download {PACKAGE} left no .deb in {cache}")
    package = packages[-1]
    unpacked = cache / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    runner(["dpkg-deb", "-x", package.name, unpacked.name], cache)
    package.unlink()
    # Keep the programs only: the package's service files and web assets are not needed.
    (cache / "usr/bin").mkdir(parents=True, exist_ok=True)
    for program in PROGRAMS:
        if (unpacked / "usr/bin" / program).exists():
            (unpacked / "usr/bin" / program).replace(cache / "usr/bin" / program)
    shutil.rmtree(unpacked)


def _run_apt(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + APT_LOCK_WAIT_S
    while True:
        result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if "Could not get lock" not in result.stderr or time.monotonic() > deadline:
            break
        time.sleep(5)
    if result.returncode != 0:
        raise StackError(
            f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr[-2000:]}"
        )
