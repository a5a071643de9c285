"""The stack: a registry of services in start order, and up/down/status over it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from jobs.localstack import process
from jobs.localstack.errors import StackError
from jobs.localstack.flink_cluster import FlinkJobManager, FlinkTaskManager
from jobs.localstack.kafka_broker import KafkaService
from jobs.localstack.mlflow_server import MlflowService
from jobs.localstack.prometheus_server import PrometheusService
from jobs.localstack.redis_server import RedisService
from jobs.localstack.service import Service, ServiceStatus
from jobs.localstack.settings import HOST, StackSettings
from jobs.localstack.triton_server import TritonService

log = logging.getLogger(__name__)

# A Service class (which may make several processes: Service.instances) or any callable
# making one service.
ServiceFactory = Callable[[StackSettings], Service]

# Start order; `down` walks it backwards. Flink and Triton go after Kafka and Redis,
# since they read from and write to those; the TaskManager registers with the JobManager.
REGISTRY: tuple[tuple[str, ServiceFactory], ...] = (
    ("kafka", KafkaService),
    ("redis", RedisService),
    ("flink-jobmanager", FlinkJobManager),
    ("flink-taskmanager", FlinkTaskManager),
    ("triton", TritonService),
    # The model registry: training logs into it, publishing reads from it.
    ("mlflow", MlflowService),
    # Watching the pipeline (`make observe`); last, so it finds the others up.
    ("prometheus", PrometheusService),
)
# Started only when named (`up --services prometheus`): the pipeline runs without them.
# `down` and `status` without names still cover them.
OPTIONAL = frozenset({"prometheus"})

# Names that stand for several services (`--services flink`).
ALIASES: dict[str, tuple[str, ...]] = {"flink": ("flink-jobmanager", "flink-taskmanager")}

_POLL_S = 0.25


def select(
    names: Sequence[str] | None, known: Sequence[str], optional: frozenset[str] = frozenset()
) -> list[str]:
    """The requested names in registry order; when `names` is None or empty, all of them
    except `optional`."""
    if not names:
        return [name for name in known if name not in optional]
    # Only aliases whose members this registry has (tests use registries of their own).
    aliases = {alias: m for alias, m in ALIASES.items() if set(m) <= set(known)}
    # Several brokers (cluster nodes, Redis and its replica) start and stop together.
    for kind in ("kafka", "redis"):
        members = tuple(name for name in known if name.startswith(f"{kind}-"))
        if members:
            aliases[kind] = (kind, *members) if kind in known else members
    if "flink" in aliases:
        managers = tuple(name for name in known if name.startswith("flink-taskmanager-"))
        aliases["flink"] = (*aliases["flink"], *managers)
    names = [member for name in names for member in aliases.get(name, (name,))]
    unknown = sorted(set(names) - set(known))
    if unknown:
        choices = ", ".join([*known, *aliases])
        raise StackError(f"unknown service(s) {', '.join(unknown)}; known: {choices}")
    return [name for name in known if name in names]


class Stack:
    def __init__(
        self,
        settings: StackSettings,
        registry: Sequence[tuple[str, ServiceFactory]] = REGISTRY,
    ) -> None:
        self.settings = settings
        # A kind may run several processes (brokers, TaskManagers), each a service.
        self.services: dict[str, Service] = {
            service.name: service for _, make in registry for service in _made(make, settings)
        }

    def _selected(
        self, names: Sequence[str] | None, optional: frozenset[str] = frozenset()
    ) -> list[Service]:
        return [self.services[name] for name in select(names, list(self.services), optional)]

    def up(self, services: Sequence[str] | None = None, timeout_s: float = 120) -> None:
        """Start what is not running and wait until every selected service is healthy.

        Without names: every service but the optional ones (Prometheus)."""
        for service in self._selected(services, OPTIONAL):
            self._up_one(service, timeout_s)

    def down(self, services: Sequence[str] | None = None) -> None:
        """Stop the selected services in reverse start order; fine if nothing runs.

        Brokers, TaskManagers or Redis nodes started with another STREAMREC_KAFKA_BROKERS,
        STREAMREC_FLINK_TASKMANAGERS or STREAMREC_REDIS_CLUSTER are stopped too when
        their kind is selected: `down` must leave no process behind whatever is set now."""
        selected = self._selected(services)
        for service in reversed(selected):
            _stop(service.name, service.pidfile, service.marker, service.stop_timeout_s)
        leftovers = (
            (KafkaService, "kafka*"),
            (FlinkTaskManager, "flink-taskmanager*"),
            (RedisService, "redis*"),
        )
        for kind, pattern in leftovers:
            if any(isinstance(service, kind) for service in selected):
                for pidfile in sorted(self.settings.home.glob(f"{pattern}/{pattern}.pid")):
                    marker = f"{pidfile.parent}/"
                    _stop(pidfile.stem, pidfile, marker, kind.stop_timeout_s)

    def status(self, services: Sequence[str] | None = None) -> list[ServiceStatus]:
        return [_status(service) for service in self._selected(services)]

    def exports(self, services: Sequence[str] | None = None) -> dict[str, str]:
        """The environment variables that point clients at the services `up` starts."""
        merged: dict[str, str] = {}
        for service in self._selected(services, OPTIONAL):
            merged.update(service.exports())
        return merged

    def _up_one(self, service: Service, timeout_s: float) -> None:
        pid = process.running_pid(service.pidfile, service.marker)
        if pid is None:
            pid = _start(service)
        else:
            log.info("%s already running (pid %d)", service.name, pid)
        try:
            _wait_healthy(service, pid, timeout_s)
            service.after_start()
        except StackError:
            # Leave nothing half-started behind: the next `up` starts from scratch.
            process.stop(pid, service.marker, service.stop_timeout_s)
            service.pidfile.unlink(missing_ok=True)
            raise


def _made(make: ServiceFactory, settings: StackSettings) -> list[Service]:
    kind = make if isinstance(make, type) and issubclass(make, Service) else None
    return kind.instances(settings) if kind is not None else [make(settings)]


def _stop(name: str, pidfile: Path, marker: str, timeout_s: float) -> None:
    pid = process.running_pid(pidfile, marker)
    if pid is not None:
        log.info("stopping %s (pid %d)", name, pid)
        process.stop(pid, marker, timeout_s)
    pidfile.unlink(missing_ok=True)


def _start(service: Service) -> int:
    service.ensure_installed()
    busy = _busy_ports(service.ports())
    if busy:
        raise StackError(
            f"cannot start {service.name}: port(s) {busy} on {HOST} are taken by another "
            "process (another stack, or a system service). Stop it, or choose other ports "
            "with the STREAMREC_*_PORT variables."
        )
    service.prepare()
    log.info("starting %s (log: %s)", service.name, service.log_path)
    return process.spawn(service.command(), service.stdout_path, service.pidfile, service.env())


def _busy_ports(ports: Sequence[int], grace_s: float = 3.0) -> list[int]:
    """Ports still taken after a short grace period.

    The grace covers a previous instance that was just killed: the kernel closes its
    sockets only once the process has fully exited, a moment after the signal.
    """
    deadline = time.monotonic() + grace_s
    while True:
        busy = [port for port in ports if process.port_in_use(HOST, port)]
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(_POLL_S)


def _wait_healthy(service: Service, pid: int, timeout_s: float) -> None:
    started = time.monotonic()
    while True:
        if not process.is_ours(pid, service.marker):
            raise StackError(_failure(service, "exited during startup"))
        if service.is_healthy():
            log.info("%s healthy after %.1f s", service.name, time.monotonic() - started)
            return
        if time.monotonic() - started > timeout_s:
            raise StackError(_failure(service, f"not healthy after {timeout_s:.0f} s"))
        time.sleep(_POLL_S)


def _failure(service: Service, what: str) -> str:
    """An error message with the end of the service's logs, which usually says why."""
    parts = [f"{service.name} {what}."]
    paths = dict.fromkeys([service.stdout_path, service.log_path])  # dedupe, keep order
    for path in paths:
        text = process.tail(path)
        if text:
            parts.append(f"--- last lines of {path} ---\n{text}")
    if len(parts) == 1:
        parts.append(f"(no output in {', '.join(str(p) for p in paths)})")
    return "\n".join(parts)


def _status(service: Service) -> ServiceStatus:
    pid = process.running_pid(service.pidfile, service.marker)
    return ServiceStatus(
        name=service.name,
        running=pid is not None,
        healthy=pid is not None and service.is_healthy(),
        pid=pid,
        endpoint=service.endpoint(),
        log_path=service.log_path,
        metrics=service.metrics_url(),
    )
