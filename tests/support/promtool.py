"""Finding promtool (Prometheus's rule checker), fetching Debian's build where we may.

promtool ships in Debian's ``prometheus`` package. Installing that package would
also enable and start a Prometheus server (prometheus.service, port 9090) on a
machine with systemd and pull a dozen web-UI packages, so it is not installed:
``apt-get download`` fetches the package and ``dpkg-deb -x`` unpacks it into a
cache folder, from which only promtool (a static Go program) is used. Nothing
outside the cache changes, except apt's package lists when they are missing
(``apt-get update``, as root only).
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "promtool"
PACKAGE = "prometheus"
# Where the package puts it, below the folder it is unpacked into (and on a system).
_IN_PACKAGE = Path("usr/bin/promtool")
_SYSTEM = Path("/usr/bin/promtool")
# Another apt (an unattended upgrade, a second test run) may hold apt's locks.
APT_LOCK_WAIT_S = 300.0

Which = Callable[[str], str | None]
Runner = Callable[[list[str], Path], None]


class PromtoolError(RuntimeError):
    """promtool is missing and cannot be fetched here."""


class PromtoolPlan(enum.Enum):
    """What to do about promtool; a pure function decides, so tests can cover each branch."""

    USE = "use"
    DOWNLOAD = "download"
    UPDATE_AND_DOWNLOAD = "update-and-download"
    GIVE_UP = "give-up"


def promtool_plan(found: str | None, has_apt: bool, has_lists: bool, is_root: bool) -> PromtoolPlan:
    if found is not None:
        return PromtoolPlan.USE
    if not has_apt:
        return PromtoolPlan.GIVE_UP
    if has_lists:
        return PromtoolPlan.DOWNLOAD  # apt-get download needs no root
    # Refreshing the package lists changes the system: root only (a container, CI).
    return PromtoolPlan.UPDATE_AND_DOWNLOAD if is_root else PromtoolPlan.GIVE_UP


def find_promtool(
    which: Which = shutil.which, cache: Path = CACHE, system: Path = _SYSTEM
) -> str | None:
    """promtool on PATH, then Debian's install path, then the cache's unpacked copy."""
    found = which("promtool")
    if found is not None:
        return found
    for candidate in (system, cache / _IN_PACKAGE):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def apt_lists_present(lists: Path = Path("/var/lib/apt/lists")) -> bool:
    """Whether apt knows any package index (a fresh container image has none)."""
    if not lists.is_dir():
        return False
    return any(p.name.endswith("_Packages") or "_Packages." in p.name for p in lists.iterdir())


def ensure_promtool(
    which: Which = shutil.which,
    is_root: bool | None = None,
    has_lists: bool | None = None,
    run: Runner | None = None,
    cache: Path = CACHE,
    system: Path = _SYSTEM,
) -> str:
    """The path of a promtool, fetching Debian's package into ``cache`` first if we can."""
    found = find_promtool(which, cache, system)
    root = os.geteuid() == 0 if is_root is None else is_root
    lists = apt_lists_present() if has_lists is None else has_lists
    has_apt = which("apt-get") is not None and which("dpkg-deb") is not None
    plan = promtool_plan(found, has_apt, lists, root)
    if plan is PromtoolPlan.USE and found is not None:
        return found
    if plan is PromtoolPlan.GIVE_UP:
        raise PromtoolError(
            "promtool not found. Install Prometheus's tools, e.g. "
            "`sudo apt-get install -y --no-install-recommends prometheus` (Debian/Ubuntu; it "
            "also starts a Prometheus service) or `go install "
            "github.com/prometheus/prometheus/cmd/promtool@latest`, then run again."
        )
    runner = run or _run_apt
    cache.mkdir(parents=True, exist_ok=True)
    if plan is PromtoolPlan.UPDATE_AND_DOWNLOAD:
        runner(["apt-get", "update", "-qq"], cache)
    for stale in cache.glob(f"{PACKAGE}_*.deb"):
        stale.unlink()
    runner(["apt-get", "download", "-qq", PACKAGE], cache)
    packages = sorted(cache.glob(f"{PACKAGE}_*.deb"))
    if not packages:
        raise PromtoolError(f"apt-get download {PACKAGE} left no .deb in {cache}")
    package = packages[-1]
    unpacked = cache / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    runner(["dpkg-deb", "-x", package.name, unpacked.name], cache)
    package.unlink()
    if not os.access(unpacked / _IN_PACKAGE, os.X_OK):
        raise PromtoolError(f"{package.name} unpacked, but it has no {_IN_PACKAGE}")
    # Keep promtool only: the package's server and web assets are not needed.
    installed = cache / _IN_PACKAGE
    installed.parent.mkdir(parents=True, exist_ok=True)
    (unpacked / _IN_PACKAGE).replace(installed)
    shutil.rmtree(unpacked)
    return str(installed)


def _run_apt(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + APT_LOCK_WAIT_S
    while True:
        result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if "Could not get lock" not in result.stderr or time.monotonic() > deadline:
            break
        time.sleep(5)
    if result.returncode != 0:
        raise PromtoolError(
            f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr[-2000:]}"
        )
