"""Generated passwords of the secured local stack, one per principal, kept in one file.

Each part of the pipeline gets its own principal, so that what one credential allows
is exactly what that part needs (SECURITY.md lists them). The passwords are random,
made at the first secured start, stored in ``<home>/secrets/credentials.json``
(mode 0600) and never printed: ``python -m jobs.localstack env --role worker`` writes
the variables a role needs to a file or the environment of the process it starts.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.tls import private_folder

# Kafka principals (SCRAM-SHA-512 users). `admin` is the broker's super user: it creates
# topics and ACLs and is what the stack itself and the tests' set-up use.
KAFKA_USERS = ("admin", "ingest", "features", "worker", "drift")
# Redis ACL users: `writer` fills the feature keys, `reader` only reads them, `router`
# sets the traffic split between model versions (the canary; schemas/routing.py).
REDIS_USERS = ("admin", "writer", "reader", "router")
# The key Triton's model-control (model-repository) protocol requires in a header.
TRITON_CONTROL = "triton-control"

FILE_NAME = "credentials.json"


@dataclass(frozen=True)
class Credentials:
    kafka: Mapping[str, str]
    redis: Mapping[str, str]
    triton_control_key: str

    def secrets(self) -> list[str]:
        """Every password, for the checks that look for them in logs and output."""
        return [*self.kafka.values(), *self.redis.values(), self.triton_control_key]


def ensure_credentials(folder: Path) -> Credentials:
    """The stack's credentials, generated and stored under ``folder`` on first use."""
    path = private_folder(folder) / FILE_NAME
    if path.exists():
        _add_missing_users(path)
    else:
        stored = {
            "kafka": {user: _password() for user in KAFKA_USERS},
            "redis": {user: _password() for user in REDIS_USERS},
            TRITON_CONTROL: _password(),
        }
        # Created 0600 before anything is written, so the passwords are never world-readable.
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump(stored, out, indent=2)
    return load_credentials(path)


def _add_missing_users(path: Path) -> None:
    """Passwords for principals added since the file was written (the rest stay)."""
    stored = json.loads(path.read_text())
    missing = [u for u in REDIS_USERS if u not in stored["redis"]]
    missing_kafka = [u for u in KAFKA_USERS if u not in stored["kafka"]]
    if not missing and not missing_kafka:
        return
    stored["redis"].update({user: _password() for user in missing})
    stored["kafka"].update({user: _password() for user in missing_kafka})
    temp = path.with_name(f".{path.name}.new")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(stored, out, indent=2)
    temp.replace(path)


def load_credentials(path: Path) -> Credentials:
    stored = json.loads(path.read_text())
    return Credentials(
        kafka=dict(stored["kafka"]),
        redis=dict(stored["redis"]),
        triton_control_key=stored[TRITON_CONTROL],
    )


def _password() -> str:
    # URL-safe letters only: these go into URLs, JAAS lines and SCRAM formatting; the code
    # that builds those escapes anyway, so a user's own password may hold anything.
    return secrets.token_urlsafe(24)
