"""A worker's transactional id when none is given: stable across restarts, unique per host.

Exactly-once needs one ``transactional.id`` per running worker, and the same one
again after a restart: ``init_transactions`` with the old id aborts the
transaction a killed worker left open, at once. Under a new id that transaction
stays open until ``transaction.timeout.ms`` passes, and every read-committed
consumer of the topic stalls behind it meanwhile.

The id is ``<group>-<host>-<slot>``. The host name tells replicas apart (in a
container it is the container's or pod's name; a process id would be 1 in every
one). The slot tells apart workers of one group on one host: each holds an
exclusive ``flock`` on ``<lock_dir>/<group>-<slot>.lock`` for its lifetime and
takes the lowest slot nobody holds, so a worker started after one died (the
kernel drops a dead process's locks) takes the dead one's slot, and its id.
"""

from __future__ import annotations

import fcntl
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# More workers of one group on one host than this is a mistake, not a deployment.
MAX_SLOTS = 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "streamrec-worker"


@dataclass
class InstanceClaim:
    """A slot held by this process until :meth:`release` (or its exit)."""

    transactional_id: str
    slot: int
    _lock: IO[bytes]

    def release(self) -> None:
        self._lock.close()  # closing the file drops its flock


def transactional_id(group: str, host: str, slot: int) -> str:
    return f"{group}-{host}-{slot}"


def claim_instance(group: str, lock_dir: Path | None = None, host: str = "") -> InstanceClaim:
    """The lowest free slot of ``group`` on this host, locked for this process's lifetime."""
    where = lock_dir or default_lock_dir()
    where.mkdir(parents=True, exist_ok=True)
    host = host or socket.gethostname()
    safe_group = _UNSAFE.sub("_", group)
    for slot in range(MAX_SLOTS):
        lock = (where / f"{safe_group}-{slot}.lock").open("ab")
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        return InstanceClaim(transactional_id(group, host, slot), slot, lock)
    raise RuntimeError(
        f"{MAX_SLOTS} workers of group {group!r} already hold slots in {where}; "
        "set a transactional id per worker instead"
    )
