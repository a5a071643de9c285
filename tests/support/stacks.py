"""A local stack of a test's own: its own home, the shared download cache, every port free.

Tests that stop or restart a service (faults, canaries, chaos) cannot share the
session's; two such stacks must not collide with each other or with `make up`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import fields
from pathlib import Path
from typing import Any

from jobs.localstack import StackSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def distinct_free_ports(count: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < count:  # distinct, or two services would race for one
        ports.add(free_port())
    return sorted(ports)


def own_stack_settings(home: Path, **overrides: Any) -> StackSettings:
    """Settings for a stack under ``home`` with every ``*_port`` free, then ``overrides``."""
    names = [f.name for f in fields(StackSettings) if f.name.endswith("_port")]
    chosen: dict[str, Any] = dict(zip(names, distinct_free_ports(len(names)), strict=True))
    return StackSettings(
        home=home,
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")).resolve(),
        **{**chosen, **overrides},
    )
