"""A throwaway certificate authority for the secured local stack, made with `openssl`.

The secured mode is meant to be the production setting rehearsed on one machine, so
every TLS listener (Kafka, Redis, Triton gRPC) presents a certificate signed by a CA
the clients are told to trust, with the loopback address in its subject names: no
client ever needs certificate checks turned off. The files live in
``<home>/secrets`` (mode 0700, keys 0600) and are made once; deleting the folder
makes new ones at the next start.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.errors import StackError

# Long enough for any local run, short enough that a leaked test key soon stops mattering.
VALID_DAYS = 30
_SUBJECT_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost"


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of the local CA and of the one server certificate every service shares."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    # Key then certificate in one file: Kafka's PEM keystore takes them so.
    server_keystore: Path

    @classmethod
    def under(cls, folder: Path) -> TlsFiles:
        return cls(
            ca_cert=folder / "ca.pem",
            server_cert=folder / "server.pem",
            server_key=folder / "server.key",
            server_keystore=folder / "server-keystore.pem",
        )

    def exist(self) -> bool:
        return all(path.exists() for path in vars(self).values())


def private_folder(folder: Path) -> Path:
    """``folder``, created readable by the owner only (secrets go in it)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder


def ensure_certificates(folder: Path) -> TlsFiles:
    """The CA and server certificate under ``folder``, made now if they are not there."""
    files = TlsFiles.under(private_folder(folder))
    if files.exist():
        return files
    openssl = shutil.which("openssl")
    if openssl is None:
        raise StackError("the secured mode needs `openssl` on PATH to make its certificates")
    ca_key = folder / "ca.key"
    csr = folder / "server.csr"
    extensions = folder / "server.ext"
    extensions.write_text(_SUBJECT_NAMES + "\n")
    days = str(VALID_DAYS)
    # The keys are written inside the 0700 folder, so nobody else sees them before chmod.
    _openssl(
        openssl,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        days,
        "-keyout",
        str(ca_key),
        "-out",
        str(files.ca_cert),
        "-subj",
        "/CN=streamrec local CA",
    )
    _openssl(
        openssl,
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-keyout",
        str(files.server_key),
        "-out",
        str(csr),
        "-subj",
        "/CN=127.0.0.1",
    )
    _openssl(
        openssl, "x509", "-req", "-in", str(csr), "-CA", str(files.ca_cert),
        "-CAkey", str(ca_key), "-CAcreateserial", "-days", days, "-sha256",
        "-extfile", str(extensions), "-out", str(files.server_cert),
    )  # fmt: skip
    files.server_keystore.write_text(files.server_key.read_text() + files.server_cert.read_text())
    for path in (ca_key, files.server_key, files.server_keystore):
        path.chmod(0o600)
    csr.unlink()
    return files


def _openssl(*argv: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StackError(f"openssl failed (exit {result.returncode}): {result.stderr[-2000:]}")
