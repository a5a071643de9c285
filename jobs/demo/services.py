"""The services the demo's loop needs: Kafka, Redis and Triton serving the trained ranker.

Configured endpoints (``STREAMREC_KAFKA_BOOTSTRAP_SERVERS`` with
``STREAMREC_REDIS_URL``; ``STREAMREC_TRITON_URL``) are used as they are. Otherwise
the local stack starts what is missing and stops again what it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from inference.serving import repository
from inference.serving.control import TritonControl, rollout
from jobs.demo.loop import FEATURE_PATH_NICENESS, RunTopics, part_group
from jobs.localstack.kafka_acls import AclNames, acl_bindings, apply_acls
from jobs.localstack.process import lower_session_priority
from jobs.localstack.redis_acl import grant_project
from jobs.localstack.redis_server import RedisReplicaService, RedisService
from jobs.localstack.roles import role_env
from jobs.localstack.service import ServiceStatus
from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import Stack
from jobs.ranker.artifacts import MANIFEST
from runtime.kafka import KafkaSettings
from runtime.online.connect import connect

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVED_MODEL = "ranker_python"  # the python-backend model: the wheel's binary has no ORT backend


# The roles of the demo's parts and of its replay (see jobs.localstack.roles).
PART_ROLES = ("ingest", "features", "writer", "worker", "drift")


@dataclass(frozen=True)
class Services:
    """The demo's own clients (admin on a secured stack) and each part's variables."""

    kafka: KafkaSettings
    redis_url: str
    triton_url: str  # gRPC host:port
    # A secured local stack gives every part its own principals; empty otherwise, and the
    # parts share the endpoints above.
    roles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Kafka is the local stack's broker (not configured endpoints): the demo may warm it.
    local_kafka: bool = False
    # The local stack's read replica of Redis, which the worker reads features from;
    # empty: the worker reads the store itself.
    redis_read_url: str = ""

    def env_of(self, role: str) -> dict[str, str]:
        """The variables ``role`` runs with over the shared ones ({} when not secured)."""
        return dict(self.roles.get(role, {}))

    def kafka_as(self, role: str) -> KafkaSettings:
        env = self.roles.get(role)
        return KafkaSettings.from_env(env) if env else self.kafka


def grant_run(services: Services, topics: RunTopics, group: str, project: str) -> None:
    """On a secured stack, give each role the run's own topics, groups and Redis keys.

    The stack grants the default topic names and Feast project at start; a run's topics
    carry its id in front and its keys its own project, so they need grants of their own
    (the roles' usual ones), as do the parts' groups under ``group``.
    """
    if not services.roles:
        return
    with connect(services.redis_url) as admin:
        grant_project(admin, project)
    names = AclNames(
        events=topics.events, requests=topics.requests,
        recommendations=topics.recommendations, changelog=topics.changelog,
        drift_alerts=f"{group}.feature-drift", worker_group=part_group(group, "worker"),
        features_group=part_group(group, "features"),
        writer_group=part_group(group, "feature-writer"), drift_group=f"{group}.drift",
    )  # fmt: skip
    apply_acls(services.kafka.client_config(), acl_bindings(names))


def ensure_model(model_dir: Path) -> None:
    """Train the ranker (and save its drift reference) unless the directory holds one."""
    if not (model_dir / MANIFEST).exists():
        print(f"no model in {model_dir}: training one (make train)", file=sys.stderr)
        _run(["jobs.ranker", "--out", str(model_dir)])
    reference = model_dir / "drift_reference.parquet"
    if not reference.exists():
        _run(["jobs.drift", "reference", "--out", str(reference)])


def _run(module_args: list[str]) -> None:
    # Output goes straight to the terminal: training shows its own progress. On stderr:
    # a check that trains first must not hand the training's RESULT line to the results
    # recorder (tests/results.py reads stdout) as its own.
    subprocess.run([sys.executable, "-m", *module_args], cwd=PROJECT_ROOT, check=True,
                   stdout=sys.stderr)  # fmt: skip


def publish_if_new(model_dir: Path, models_root: Path) -> bool:
    """Publish the model unless the newest published version is this very model."""
    published = repository.versions(models_root / SERVED_MODEL)
    if published:
        newest = models_root / SERVED_MODEL / str(published[-1]) / MANIFEST
        if newest.exists() and newest.read_bytes() == (model_dir / MANIFEST).read_bytes():
            return False
    version = repository.publish(model_dir, models_root)
    print(f"published the ranker as version {version} in {models_root}", file=sys.stderr)
    return True


@contextmanager
def demo_services(model_dir: Path, keep_stack: bool) -> Iterator[Services]:
    settings = StackSettings.from_env()
    stack = Stack(settings)
    wanted = []
    if not os.environ.get("STREAMREC_KAFKA_BOOTSTRAP_SERVERS"):
        wanted += ["kafka", "redis"]
    triton_url = os.environ.get("STREAMREC_TRITON_URL")
    fresh_model = False
    if not triton_url:
        fresh_model = publish_if_new(model_dir, settings.model_repository)
        wanted.append("triton")
        triton_url = settings.triton_grpc_url
    # Stack.up/status/down take an empty list as "every service": only call them with names.
    already = (
        {status.name for status in stack.status(wanted) if status.healthy} if wanted else set()
    )
    started = [name for name in wanted if name not in already]
    try:
        if wanted:
            stack.up(wanted)
        if "triton" in already and fresh_model:
            # A server kept from an earlier run swaps to the new version without a gap.
            key = role_env(settings, "serving").get("STREAMREC_TRITON_CONTROL_KEY", "")
            control = TritonControl(settings.triton_http_url, control_key=key)
            rollout(control, settings.model_repository / SERVED_MODEL)
        kafka = (
            KafkaSettings.from_env()
            if "kafka" not in wanted
            else KafkaSettings(settings.kafka_bootstrap, KafkaSettings.from_env().extra)
        )
        redis_url = os.environ.get("STREAMREC_REDIS_URL") or settings.redis_url
        if settings.secure and "kafka" in wanted:
            admin = role_env(settings, "admin")
            roles = {role: role_env(settings, role) for role in PART_ROLES}
            kafka, redis_url = KafkaSettings.from_env(admin), admin["STREAMREC_REDIS_URL"]
            yield Services(kafka, redis_url, triton_url, roles, local_kafka=True)
        else:
            # "redis" names the primary and its replica: one look at both.
            redis_pair = stack.status([RedisService.name]) if "redis" in wanted else []
            replica = any(s.name == RedisReplicaService.name and s.healthy for s in redis_pair)
            read_url = settings.redis_replica_url if replica else ""
            if replica and "redis" in started:
                yield_primary(redis_pair, FEATURE_PATH_NICENESS)
            yield Services(kafka, redis_url, triton_url, local_kafka="kafka" in wanted,
                           redis_read_url=read_url)  # fmt: skip
    finally:
        if started and not keep_stack:
            print(f"stopping {', '.join(started)}", file=sys.stderr)
            stack.down(started)


def yield_primary(statuses: Sequence[ServiceStatus], niceness: int) -> int | None:
    """Lower the primary Redis's CPU priority as the feature path's parts are lowered;
    its pid, or None where it is not running.

    With the worker's feature reads on the replica, the primary serves the feature
    path (the writer's upserts and their fsyncs, the replication stream) and the
    worker's rare traffic-split reads. Unniced, its 0.11 of a core competed with the
    request path for the two cores; niced, the demo's p99 was 46-52 ms against 54-81
    in four alternating pairs (docs/benchmarks.md, the demo). Only a primary the demo
    started itself is lowered: it stops with the run (with ``--keep-stack`` it runs on
    niced until ``make down``), and a stack kept from ``make up`` keeps its priority.
    """
    for status in statuses:
        if status.name == RedisService.name and status.pid is not None:
            # Redis's main thread, which serves every command and its fsync; the session's
            # autogroup covers its helper threads against the other sessions.
            os.setpriority(os.PRIO_PROCESS, status.pid, niceness)
            lower_session_priority(status.pid, niceness)
            return status.pid
    return None
