"""Where the local stack lives and which ports it uses, read once from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.errors import StackError
from runtime.settings import (
    CACHE_DIR_ENV,
    DEFAULT_CACHE_DIR,
    DEFAULT_STACK_HOME,
    STACK_HOME_ENV,
    Settings,
    setting,
)

# Loopback only: the stack is for one developer machine, never for a network.
HOST = "127.0.0.1"
MAX_KAFKA_BROKERS = 5
KAFKA_NODE_PORT_STEP = 100
MAX_TASKMANAGERS = 4
KAFKA_JITS = ("c1", "tiered")
# A Redis Cluster of three masters, each with one replica: the smallest that survives a
# master's loss (a majority of masters must agree on its replica's promotion).
REDIS_CLUSTER_MASTERS = 3
REDIS_CLUSTER_NODES = 2 * REDIS_CLUSTER_MASTERS


def _absolute(text: str) -> Path:
    # Absolute, because the path is also the marker that identifies our processes
    # in /proc/<pid>/cmdline; a relative path would match other checkouts.
    return Path(text).expanduser().resolve()


def _port(default: int, env: str, service: str) -> int:
    """A port field (all are checked the same way in ``__post_init__``)."""
    result: int = setting(default, env=env, help=f"port of {service}")
    return result


@dataclass(frozen=True)
class StackSettings(Settings):
    """Paths and ports of one local stack; two stacks with different homes and ports coexist."""

    error = StackError

    home: Path = setting(
        env=STACK_HOME_ENV, help="data, pid files and logs", parse=_absolute, shown=".stack"
    )
    cache_dir: Path = setting(
        env=CACHE_DIR_ENV, help="downloads (jars, binaries)", parse=_absolute, shown=".cache"
    )
    kafka_port: int = _port(9092, "STREAMREC_KAFKA_PORT", "Kafka broker")
    kafka_controller_port: int = _port(9093, "STREAMREC_KAFKA_CONTROLLER_PORT", "KRaft controller")
    redis_port: int = _port(6379, "STREAMREC_REDIS_PORT", "Redis")
    flink_rest_port: int = _port(8081, "STREAMREC_FLINK_REST_PORT", "Flink REST API and web UI")
    flink_rpc_port: int = _port(6123, "STREAMREC_FLINK_RPC_PORT", "Flink JobManager RPC")
    # Flink's Prometheus reporter, one endpoint per process (jobs/features/metrics.py).
    flink_jobmanager_metrics_port: int = _port(
        9249, "STREAMREC_FLINK_JOBMANAGER_METRICS_PORT", "the Flink JobManager's /metrics"
    )
    flink_taskmanager_metrics_port: int = _port(
        9250, "STREAMREC_FLINK_TASKMANAGER_METRICS_PORT", "the Flink TaskManager's /metrics"
    )
    triton_http_port: int = _port(8000, "STREAMREC_TRITON_HTTP_PORT", "Triton HTTP")
    triton_grpc_port: int = _port(8001, "STREAMREC_TRITON_GRPC_PORT", "Triton gRPC")
    triton_metrics_port: int = _port(8002, "STREAMREC_TRITON_METRICS_PORT", "Triton metrics")
    mlflow_port: int = _port(5000, "STREAMREC_MLFLOW_PORT", "MLflow tracking server")
    prometheus_port: int = _port(9090, "STREAMREC_PROMETHEUS_PORT", "Prometheus (make observe)")
    # Every 2 s: a first incident shows on the dashboard within seconds, and a rate over
    # a few scrapes is still smooth.
    prometheus_scrape_interval_s: float = setting(
        2.0,
        env="STREAMREC_PROMETHEUS_SCRAPE_INTERVAL_S",
        help="how often the local Prometheus scrapes every part, in seconds",
    )
    # Committed and touched at start (-Xms equal to -Xmx, as Kafka's own start script
    # sizes it, plus pre-touch): the broker's memory is its size from the first minute,
    # and no GC pause on the request path waits for the kernel to hand out a page.
    kafka_heap_mb: int = setting(
        1024, env="STREAMREC_KAFKA_HEAP_MB", help="the broker's JVM heap, in MB, committed at start"
    )
    # c1: the broker's JIT compiles with C1 only. A local broker serves runs of minutes (the
    # demo, the tests, the benchmarks), and with the JVM's default tiers it spends their
    # first seconds under load compiling with C2: in `make demo`, after a 20 s warm-up,
    # its compiler threads took 0.3-0.8 of a core through the replay's first 1.5 s, and
    # the first 10 s' p99 was 132-428 ms (docs/benchmarks.md, the demo's levers). C1's
    # code costs about 0.06-0.1 of a core more at the demo's load.
    # tiered: the JVM's default, for a broker that runs for days.
    kafka_jit: str = setting(
        "c1", env="STREAMREC_KAFKA_JIT", help=f"the broker's JIT: {' or '.join(KAFKA_JITS)}"
    )
    # 3: a replicated Kafka (every topic on three brokers, two in sync for a write to
    # count), the shape production runs; node n listens on the ports plus 100 * (n - 1).
    kafka_brokers: int = setting(
        1, env="STREAMREC_KAFKA_BROKERS", help="KRaft brokers to start (1, or 3 for replication)"
    )
    # 2: the feature job's operators spread over two TaskManagers (one slot each), as a
    # cluster runs it; TaskManager n's metrics port is the one above plus 10 * (n - 1).
    flink_taskmanagers: int = setting(
        1, env="STREAMREC_FLINK_TASKMANAGERS", help="Flink TaskManagers to start (one slot each)"
    )
    # A replica of the one Redis that takes no writes and keeps no files, for the worker's
    # feature reads (STREAMREC_WORKER_REDIS_READ_URL): the primary fsyncs every write pass
    # before it answers anything, and a read queued behind those fsyncs waits for the disk.
    redis_replica_port: int = setting(
        0,
        env="STREAMREC_REDIS_REPLICA_PORT",
        help="port of a read replica of Redis for the worker (0 = none)",
    )
    # A Redis Cluster (three masters, three replicas) instead of one Redis; node n
    # listens on the Redis port plus n - 1 (its cluster bus on that plus 10000).
    redis_cluster: bool = setting(
        False,
        env="STREAMREC_REDIS_CLUSTER",
        help="start a Redis Cluster of six nodes (three masters, three replicas)",
    )
    # None: `<home>/models`, where `streamrec-serving publish` writes by default.
    triton_model_repository: Path | None = setting(
        None,
        env="STREAMREC_TRITON_MODEL_REPOSITORY",
        help="the model repository Triton serves",
        parse=_absolute,
        shown="<home>/models",
    )
    # One switch for the whole stack: Kafka on SASL_SSL with SCRAM users and ACLs, Redis
    # with ACL users over TLS, Triton's gRPC over TLS with its model control behind a key.
    # Certificates and passwords are generated at first start under <home>/secrets.
    secure: bool = setting(
        False,
        env="STREAMREC_STACK_SECURE",
        help="start the stack in the secured mode (TLS, users, ACLs); see SECURITY.md",
    )
    # Loaded at start when published (explicit model control; the rest load on demand).
    triton_models: tuple[str, ...] = setting(
        ("ranker_python",), env="STREAMREC_TRITON_MODELS", help="models loaded at start"
    )

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            port = getattr(self, name)
            if name == "redis_replica_port" and port == 0:
                continue  # none
            if name.endswith("_port") and not 0 < port < 65536:
                raise StackError(f"{self.variable(name)}={port} is outside 1..65535")
        if not 0.1 <= self.prometheus_scrape_interval_s <= 60:
            raise StackError(f"{self.variable('prometheus_scrape_interval_s')} must be 0.1..60")
        if not 1 <= self.kafka_brokers <= MAX_KAFKA_BROKERS:
            raise StackError(f"{self.variable('kafka_brokers')} must be 1..{MAX_KAFKA_BROKERS}")
        if self.kafka_brokers > 1 and self.secure:
            raise StackError(
                f"{self.variable('kafka_brokers')} > 1 is not available in the secured mode "
                "yet: the secured listeners are set up for a single node"
            )
        if self.redis_cluster and self.secure:
            raise StackError(
                f"{self.variable('redis_cluster')} is not available in the secured mode "
                "yet: its nodes' TLS bus and replication users are not set up"
            )
        if self.redis_replica_port and (self.redis_cluster or self.secure):
            raise StackError(
                f"{self.variable('redis_replica_port')} is available with one plain Redis "
                "only: the secured mode's replication user and the cluster's own replicas "
                "are not set up for it yet"
            )
        if not 1 <= self.flink_taskmanagers <= MAX_TASKMANAGERS:
            raise StackError(f"{self.variable('flink_taskmanagers')} must be 1..{MAX_TASKMANAGERS}")
        if self.kafka_heap_mb < 256:
            raise StackError(f"{self.variable('kafka_heap_mb')} must be at least 256")
        if self.kafka_jit not in KAFKA_JITS:
            raise StackError(
                f"{self.variable('kafka_jit')} must be one of {', '.join(KAFKA_JITS)}, "
                f"got {self.kafka_jit!r}"
            )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> StackSettings:
        """Defaults are `.stack/` and `.cache/` in the current directory (the repo root)."""
        base = Path.cwd() if cwd is None else cwd
        return cls.load(
            environ,
            home=_absolute(str(base / DEFAULT_STACK_HOME)),
            cache_dir=_absolute(str(base / DEFAULT_CACHE_DIR)),
        )

    @property
    def secrets_dir(self) -> Path:
        """Certificates and generated passwords of the secured mode (mode 0700)."""
        return self.home / "secrets"

    def kafka_node_ports(self, node: int) -> tuple[int, int]:
        """(client port, controller port) of broker ``node`` (1-based)."""
        offset = KAFKA_NODE_PORT_STEP * (node - 1)
        return self.kafka_port + offset, self.kafka_controller_port + offset

    @property
    def kafka_replication(self) -> int:
        """Replicas of every topic: all brokers, at most three."""
        return min(3, self.kafka_brokers)

    @property
    def kafka_bootstrap(self) -> str:
        nodes = range(1, self.kafka_brokers + 1)
        return ",".join(f"{HOST}:{self.kafka_node_ports(node)[0]}" for node in nodes)

    def redis_node_ports(self) -> list[int]:
        """The client port of every Redis process: one, or the cluster's six."""
        nodes = REDIS_CLUSTER_NODES if self.redis_cluster else 1
        return [self.redis_port + offset for offset in range(nodes)]

    @property
    def redis_url(self) -> str:
        if self.redis_cluster:
            # The masters' ports, so discovery starts even with one of them down.
            ports = self.redis_node_ports()[:REDIS_CLUSTER_MASTERS]
            return "redis+cluster://" + ",".join(f"{HOST}:{port}" for port in ports)
        return f"redis://{HOST}:{self.redis_port}/0"

    @property
    def redis_replica_url(self) -> str:
        """The read replica's URL; empty without one."""
        return f"redis://{HOST}:{self.redis_replica_port}/0" if self.redis_replica_port else ""

    @property
    def flink_rest_url(self) -> str:
        """The JobManager's REST API, which is also its web UI."""
        return f"http://{HOST}:{self.flink_rest_port}"

    @property
    def model_repository(self) -> Path:
        """The Triton model repository the stack serves (published versions live here)."""
        return self.triton_model_repository or self.home / "models"

    @property
    def triton_http_url(self) -> str:
        return f"http://{HOST}:{self.triton_http_port}"

    @property
    def triton_grpc_url(self) -> str:
        """host:port, the form tritonclient.grpc takes."""
        return f"{HOST}:{self.triton_grpc_port}"
