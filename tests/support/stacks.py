"""A local stack of a test's own: its own home, the shared download cache, every port free.

Tests that stop or restart a service (faults, canaries, chaos) cannot share the
session's; two such stacks must not collide with each other or with `make up`.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
from collections.abc import Collection
from dataclasses import fields
from pathlib import Path
from typing import Any

from jobs.localstack import StackSettings
from jobs.localstack.settings import REDIS_CLUSTER_NODES

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def distinct_free_ports(count: int, avoid: Collection[int] = ()) -> list[int]:
    """``count`` free ports, none of them in ``avoid`` (ports handed out already but not
    yet bound: the kernel may offer a closed probe's port again)."""
    ports: set[int] = set()
    while len(ports) < count:  # distinct, or two services would race for one
        port = free_port()
        if port not in avoid:
            ports.add(port)
    return sorted(ports)


def is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_run(count: int, bus_offset: int = 10000) -> int:
    """The first of ``count`` consecutive free ports whose ``+ bus_offset`` twins are free
    too, as a Redis Cluster's nodes and buses take them; below the ephemeral range, so
    that no port :func:`free_port` hands out meets them."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 30000 - count)
        ports = [base + i for i in range(count)]
        if all(is_free(port) and is_free(port + bus_offset) for port in ports):
            return base
    raise RuntimeError(f"no {count} consecutive free ports found between 20000 and 30000")


def run_home(prefix: str, root: Path = REPO_ROOT / ".stack") -> Path:
    """A new folder ``<root>/<prefix><random>`` for one run's stack; ``root`` is made first,
    as a fresh clone has no ``.stack`` until something starts the local stack there."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def own_stack_settings(
    home: Path, avoid_ports: Collection[int] = (), **overrides: Any
) -> StackSettings:
    """Settings for a stack under ``home`` with every ``*_port`` free and not in
    ``avoid_ports``, then ``overrides``.

    With ``redis_cluster=True`` the Redis port starts a run of six free ports (and
    their cluster bus ports). The Redis read replica is started only with
    ``redis_replica_port`` among the overrides."""
    # The read replica stays off (port 0) unless asked for: it is not there in every mode.
    names = [
        f.name
        for f in fields(StackSettings)
        if f.name.endswith("_port") and f.name != "redis_replica_port"
    ]
    ports = distinct_free_ports(len(names), avoid_ports)
    chosen: dict[str, Any] = dict(zip(names, ports, strict=True))
    if overrides.get("redis_cluster"):
        chosen["redis_port"] = free_port_run(REDIS_CLUSTER_NODES)
    return StackSettings(
        home=home,
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")).resolve(),
        **{**chosen, **overrides},
    )
