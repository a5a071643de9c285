"""The variables each part of the pipeline needs to reach the local stack as itself.

In the plaintext mode every role gets the same endpoints. In the secured mode each
role gets its own principals, so that a credential allows exactly what that part
does (SECURITY.md has the table): the worker reads Redis as ``reader`` and cannot
write events; only ``admin`` and the serving CLI hold Triton's control key.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.localstack.errors import StackError
from jobs.localstack.kafka_broker import client_properties, kafka_config_value
from jobs.localstack.redis_server import redis_url_for
from jobs.localstack.settings import StackSettings
from jobs.localstack.triton_server import control_env, inference_env


@dataclass(frozen=True)
class Role:
    """Which principal a role uses with each service (None: it does not reach it)."""

    kafka_user: str | None
    redis_user: str | None
    triton_inference: bool = False
    triton_control: bool = False


ROLES: dict[str, Role] = {
    # Topic and ACL set-up, reading back for reports; what the stack itself uses.
    "admin": Role("admin", "admin", triton_inference=True, triton_control=True),
    # Teams producing behaviour events (the replay in the demo).
    "ingest": Role("ingest", None),
    # The Flink feature job: events in, the feature changelog and dead letters out.
    "features": Role("features", None),
    # The feature writer: the changelog in, feature rows and stock marks into Redis.
    "writer": Role("features", "writer"),
    # The inference worker: requests in, recommendations out; reads features; scores.
    "worker": Role("worker", "reader", triton_inference=True),
    # The drift job: the changelog and recommendations in, alerts out.
    "drift": Role("drift", "reader"),
    # The serving CLI: publishes, loads and rolls back models; its canary sets the split.
    "serving": Role(None, "router", triton_control=True),
}


def role_env(settings: StackSettings, role: str) -> dict[str, str]:
    """The ``STREAMREC_*`` variables ``role`` runs with; secured, they hold its passwords."""
    if role not in ROLES:
        raise StackError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")
    wanted = ROLES[role]
    env: dict[str, str] = {}
    if wanted.kafka_user is not None:
        env["STREAMREC_KAFKA_BOOTSTRAP_SERVERS"] = settings.kafka_bootstrap
        properties = client_properties(settings, wanted.kafka_user)
        if properties:
            env["STREAMREC_KAFKA_CONFIG"] = kafka_config_value(properties)
    if wanted.redis_user is not None:
        env["STREAMREC_REDIS_URL"] = redis_url_for(settings, wanted.redis_user)
    if wanted.triton_inference:
        env.update(inference_env(settings))
    if wanted.triton_control:
        env.update(control_env(settings))
    return env
