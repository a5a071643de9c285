"""Which processes listen on which address: read from ``/proc``, no tool needed.

A listening socket is a line of ``/proc/net/tcp`` or ``tcp6`` in state ``0A``; its
inode links it to the process whose ``/proc/<pid>/fd`` holds ``socket:[inode]``.
Only the processes the check started are judged: a developer machine has its own
listeners (sshd, a database) that are none of the pipeline's business.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"
PROC = Path("/proc")


@dataclass(frozen=True)
class Listener:
    address: str
    port: int
    inode: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


def parse_address(hex_address: str) -> tuple[str, int]:
    """``0100007F:1F90`` → ``("127.0.0.1", 8080)``; IPv6 words are little-endian too."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    # The kernel prints the address as 32-bit words in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(port, 16)


def parse_table(text: str) -> list[Listener]:
    """The listening sockets of one ``/proc/net/tcp*`` table."""
    found = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == LISTEN:
            address, port = parse_address(fields[1])
            found.append(Listener(address, port, int(fields[9])))
    return found


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        for entry in os.scandir(PROC / str(pid) / "fd"):
            try:
                target = str(Path(entry.path).readlink())
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:  # gone, or not ours to read
        pass
    return inodes


def descendants(roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them (a server's workers, Triton's stubs)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = set(), list(roots)
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending += children.get(pid, [])
    return found


def listeners_of(pids: Iterable[int]) -> dict[int, list[Listener]]:
    """Each process's listening sockets (only processes that have some)."""
    table = [
        listener
        for name in ("tcp", "tcp6")
        if (PROC / "net" / name).exists()
        for listener in parse_table((PROC / "net" / name).read_text())
    ]
    by_inode = {listener.inode: listener for listener in table}
    result = {}
    for pid in pids:
        mine = [by_inode[inode] for inode in socket_inodes(pid) if inode in by_inode]
        if mine:
            result[pid] = sorted(mine, key=lambda item: item.port)
    return result


def exposed(listening: dict[int, list[Listener]]) -> list[tuple[int, Listener]]:
    """The sockets that accept connections from beyond this machine."""
    return [(pid, item) for pid, items in listening.items() for item in items if not item.loopback]
