"""The secured stack on free ports, the demo through it, and the attempts it must refuse.

Split from the command line so that pytest runs the same steps on a small slice
(the quick part in ``make test``) as ``make security-check`` runs on a bigger one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from inference.serving import repository
from inference.serving.settings import CONTROL_KEY_HEADER
from jobs.demo.services import SERVED_MODEL
from jobs.localstack import Stack, StackSettings
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.kafka_broker import KafkaService
from jobs.localstack.process import running_pid
from jobs.localstack.roles import role_env
from jobs.localstack.tls import TlsFiles
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from schemas.topics import REC_REQUESTS, RECOMMENDATIONS, USER_BEHAVIOR
from tests.conftest import REPO_ROOT, free_port
from tests.security.leaks import Leak, scan_bytes, scan_tree
from tests.security.listeners import Listener, descendants, listeners_of
from tests.security.probes import (
    Probe,
    grpc_repository_index,
    http_status,
    kafka_config,
    kafka_consume,
    kafka_metadata,
    kafka_produce,
    redis_attempt,
)

# Variables that would make the demo use other services than the secured stack.
FOREIGN = (
    "STREAMREC_KAFKA_BOOTSTRAP_SERVERS",
    "STREAMREC_KAFKA_CONFIG",
    "STREAMREC_REDIS_URL",
    "STREAMREC_TRITON_URL",
)
SUFFIX = ".security-probe"  # probe topics fall under the default names' grants
SERVICES = ["kafka", "redis", "triton"]


def secured_settings(home: Path) -> StackSettings:
    return StackSettings(
        home=home,
        cache_dir=Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache")).resolve(),
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
        redis_port=free_port(),
        flink_rest_port=free_port(),
        flink_rpc_port=free_port(),
        triton_http_port=free_port(),
        triton_grpc_port=free_port(),
        triton_metrics_port=free_port(),
        secure=True,
    )


def stack_variables(settings: StackSettings) -> dict[str, str]:
    """The variables under which another process builds these very settings."""
    names = [
        "home",
        "cache_dir",
        "kafka_port",
        "kafka_controller_port",
        "redis_port",
        "flink_rest_port",
        "flink_rpc_port",
        "triton_http_port",
        "triton_grpc_port",
        "triton_metrics_port",
    ]
    env = {settings.variable(name): str(getattr(settings, name)) for name in names}
    env[settings.variable("secure")] = "1"
    return env


@dataclass
class ListenerWatch:
    """Samples every second which sockets the watched process trees listen on."""

    roots: list[int]
    seen: dict[tuple[str, int, str], Listener] = field(default_factory=dict)
    samples: int = 0

    def sample(self) -> None:
        for pid, listener in _with_names(listeners_of(descendants(self.roots))):
            self.seen[(listener.address, listener.port, pid)] = listener
        self.samples += 1

    def exposed(self) -> list[tuple[str, Listener]]:
        return [(name, item) for (_a, _p, name), item in self.seen.items() if not item.loopback]


def _with_names(listening: Mapping[int, list[Listener]]) -> Iterator[tuple[str, Listener]]:
    for pid, items in listening.items():
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            name = str(pid)
        for item in items:
            yield name, item


@contextmanager
def watching(watch: ListenerWatch) -> Iterator[ListenerWatch]:
    done = threading.Event()

    def loop() -> None:
        while not done.wait(1.0):
            watch.sample()

    thread = threading.Thread(target=loop, name="listener-watch", daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        done.set()
        thread.join()
        watch.sample()


def stack_pids(stack: Stack) -> list[int]:
    pids = [running_pid(s.pidfile, s.marker) for s in stack.services.values()]
    return [pid for pid in pids if pid is not None]


def run_demo(
    settings: StackSettings, model_dir: Path, limit: int, out: Path, watch: ListenerWatch
) -> int:
    """The demo on the first ``limit`` events through the secured stack; its exit status."""
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    env.update(stack_variables(settings))
    env["STREAMREC_MODEL_DIR"] = str(model_dir)
    argv = [sys.executable, "-m", "jobs.demo", "--limit", str(limit), "--speed", "0"]
    with out.open("wb") as log:
        demo = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=log)
        watch.roots.append(demo.pid)
        return demo.wait()


def probe_topics(settings: StackSettings) -> dict[str, str]:
    """One topic per default name (covered by the default grants), each holding a record."""
    admin = KafkaSettings.from_env(role_env(settings, "admin"))
    topics = {base: base + SUFFIX for base in (USER_BEHAVIOR, REC_REQUESTS, RECOMMENDATIONS)}
    ensure_topics(admin, [TopicSpec(name) for name in topics.values()])
    config = kafka_config(
        admin.bootstrap_servers, role_env(settings, "admin")["STREAMREC_KAFKA_CONFIG"]
    )
    for name in topics.values():
        if kafka_produce("admin seeds " + name, config, name).accepted is not True:
            raise RuntimeError(f"the admin could not write {name}: the stack is not usable")
    return topics


def probes(settings: StackSettings) -> list[Probe]:
    """Every attempt the secured stack must refuse."""
    topics = probe_topics(settings)
    events, requests, recs = (topics[b] for b in (USER_BEHAVIOR, REC_REQUESTS, RECOMMENDATIONS))
    bootstrap = settings.kafka_bootstrap
    creds = ensure_credentials(settings.secrets_dir)
    ca = str(TlsFiles.under(settings.secrets_dir).ca_cert)

    def kafka_as(role: str) -> dict[str, str]:
        return kafka_config(bootstrap, role_env(settings, role).get("STREAMREC_KAFKA_CONFIG", ""))

    sasl = "security.protocol=SASL_SSL,sasl.mechanism=SCRAM-SHA-512,ssl.ca.location=" + ca
    redis_base = f"127.0.0.1:{settings.redis_port}/0"
    redis_reader = role_env(settings, "worker")["STREAMREC_REDIS_URL"]
    redis_writer = role_env(settings, "writer")["STREAMREC_REDIS_URL"]
    wrong = "wrong-" + creds.redis["reader"][:4]
    triton_http, grpc = settings.triton_http_url, settings.triton_grpc_url
    load = f"{triton_http}/v2/repository/models/{SERVED_MODEL}/load"
    return [
        kafka_metadata("Kafka: plaintext client", kafka_config(bootstrap), events),
        kafka_metadata(
            "Kafka: TLS, no credentials",
            kafka_config(bootstrap, "security.protocol=SSL,ssl.ca.location=" + ca),
            events,
        ),
        kafka_metadata(
            "Kafka: worker with a wrong password",
            kafka_config(bootstrap, f"{sasl},sasl.username=worker,sasl.password=not-it"),
            events,
        ),
        kafka_metadata(
            "Kafka: unknown user",
            kafka_config(bootstrap, f"{sasl},sasl.username=mallory,sasl.password=x"),
            events,
        ),
        kafka_metadata(
            "Kafka: plaintext on the controller port",
            kafka_config(f"127.0.0.1:{settings.kafka_controller_port}"),
            events,
        ),
        redis_attempt(
            "unauthenticated",
            "Redis: TLS, default user",
            f"rediss://{redis_base}?ssl_ca_certs={ca}",
            lambda client: client.get("any"),
        ),
        redis_attempt(
            "unauthenticated",
            "Redis: plaintext",
            f"redis://{redis_base}",
            lambda client: client.get("any"),
        ),
        redis_attempt(
            "unauthenticated",
            "Redis: reader with a wrong password",
            f"rediss://reader:{wrong}@{redis_base}?ssl_ca_certs={ca}",
            lambda client: client.get("any"),
        ),
        http_status("unauthenticated", "Triton: HTTP model load without the key", load, b"{}"),
        http_status(
            "unauthenticated",
            "Triton: HTTP model load with a wrong key",
            load,
            b"{}",
            {CONTROL_KEY_HEADER: "not-it"},
        ),
        grpc_repository_index("Triton: gRPC model control without the key", grpc, ca),
        grpc_repository_index("Triton: gRPC in plaintext", grpc, None),
        kafka_produce("Kafka: worker writes events", kafka_as("worker"), events),
        # In a group of the worker's own: the topic's grant is what is judged.
        kafka_consume(
            "Kafka: worker reads events", kafka_as("worker"), events, "streamrec-worker-x"
        ),
        kafka_consume(
            "Kafka: ingest reads recommendations", kafka_as("ingest"), recs, "streamrec-worker"
        ),
        kafka_produce("Kafka: drift writes requests", kafka_as("drift"), requests),
        kafka_produce("Kafka: features write recommendations", kafka_as("features"), recs),
        redis_attempt(
            "acl",
            "Redis: reader writes a feature row",
            redis_reader,
            lambda client: client.hset("user_recent_clicks:streamrec", "f", "v"),
        ),
        redis_attempt(
            "acl", "Redis: writer flushes the store", redis_writer, lambda client: client.flushall()
        ),
        redis_attempt(
            "acl",
            "Redis: writer writes outside the project",
            redis_writer,
            lambda client: client.set("other:key", "v"),
        ),
    ]


def secrets_of(settings: StackSettings) -> list[str]:
    return ensure_credentials(settings.secrets_dir).secrets()


def leaks(
    settings: StackSettings, outputs: list[Path], extra_text: str = ""
) -> tuple[int, list[Leak]]:
    """(files read, leaks) over the stack's home, the run's outputs and ``extra_text``.

    The secrets folder and the broker's own configuration file (its inter-broker JAAS
    line) hold passwords by design, readable by their owner only.
    """
    secrets = secrets_of(settings)
    exempt = [settings.secrets_dir, KafkaService(settings).properties]
    read, found = scan_tree(settings.home, secrets, exempt)
    for path in outputs:
        if path.is_dir():
            more, more_found = scan_tree(path, secrets)
        elif path.is_file():
            more, more_found = 1, scan_bytes(path.read_bytes(), secrets, str(path))
        else:  # nothing was written there
            continue
        read, found = read + more, found + more_found
    found += scan_bytes(extra_text.encode(), secrets, "the check's own output")
    return read, found


def stack_up(settings: StackSettings, model_dir: Path) -> Stack:
    """Kafka, Redis and Triton (serving ``model_dir``) in the secured mode."""
    repository.publish(model_dir, settings.model_repository)
    stack = Stack(settings)
    stack.up(SERVICES)
    return stack
