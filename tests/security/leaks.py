"""Where a secret shows up: every file a run wrote, and what it printed.

A secret is looked for as it is and in the encodings a log line could carry it in
(URL-quoted, base64 of the text), so a password that leaks inside a connection URL or
a SASL exchange dump is found too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

# The secrets folder holds them on purpose (0600), as do the servers' own config files.
DEFAULT_EXEMPT = ("secrets",)


@dataclass(frozen=True)
class Leak:
    where: str
    secret_index: int  # which secret, never the secret itself


def forms(secret: str) -> list[bytes]:
    text = secret.encode()
    encoded = {text, quote(secret, safe="").encode(), base64.b64encode(text)}
    return sorted(encoded)


def scan_bytes(data: bytes, secrets: Iterable[str], where: str) -> list[Leak]:
    return [
        Leak(where, index)
        for index, secret in enumerate(secrets)
        if secret and any(form in data for form in forms(secret))
    ]


def scan_tree(
    root: Path, secrets: Iterable[str], exempt: Iterable[Path] = ()
) -> tuple[int, list[Leak]]:
    """(files read, leaks) under ``root``, skipping the ``exempt`` files and folders."""
    secrets = list(secrets)
    skipped = [path.resolve() for path in exempt]
    read, leaks = 0, []
    for path in sorted(root.rglob("*")):
        resolved = path.resolve()
        if not path.is_file() or path.is_symlink():
            continue
        if any(resolved == skip or skip in resolved.parents for skip in skipped):
            continue
        read += 1
        leaks += scan_bytes(path.read_bytes(), secrets, str(path))
    return read, leaks
