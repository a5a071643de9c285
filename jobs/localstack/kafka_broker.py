"""A single-node Kafka 4.1 broker in KRaft mode, run from Maven Central jars (no Docker)."""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
import uuid
from pathlib import Path

from jobs.localstack import binaries, process
from jobs.localstack.errors import StackError
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.1.1"
_HERE = Path(__file__).resolve().parent
POM = _HERE / "kafka-pom.xml"
LOG4J2_CONFIG = _HERE / "kafka-log4j2.properties"
_COMPLETE = ".complete"


def render_server_properties(settings: StackSettings, data_dir: Path) -> str:
    """server.properties for one combined broker+controller node on loopback."""
    port, ctrl = settings.kafka_port, settings.kafka_controller_port
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"{HOST}:{ctrl}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{ctrl}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        # One node: every internal topic must make do with a single replica.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        # Nobody else will join the group, so do not wait 3 s for them.
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
    }
    lines = ["# Written by jobs.localstack on every start; edits are overwritten."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def random_cluster_id() -> str:
    """What `kafka-storage.sh random-uuid` prints (URL-safe base64 of 16 random bytes).

    Generated here to save one JVM start. Kafka never hands out ids starting with
    "-", as they read like command-line flags, so neither do we.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaService(Service):
    name = "kafka"
    # SIGTERM starts a controlled shutdown; give it time to flush and close the logs.
    stop_timeout_s = 30.0

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.libs = settings.cache_dir / f"kafka-{KAFKA_VERSION}" / "libs"
        self.data_dir = self.dir / "data"
        self.logs_dir = self.dir / "logs"
        self.properties = self.dir / "server.properties"
        self._java: str | None = None

    @property
    def log_path(self) -> Path:
        return self.logs_dir / "server.log"

    def ports(self) -> tuple[int, ...]:
        return (self.settings.kafka_port, self.settings.kafka_controller_port)

    def endpoint(self) -> str:
        return self.settings.kafka_bootstrap

    def exports(self) -> dict[str, str]:
        return {"STREAMREC_KAFKA_BOOTSTRAP_SERVERS": self.settings.kafka_bootstrap}

    @property
    def java(self) -> str:
        if self._java is None:
            self._java = binaries.find_java()
        return self._java

    def ensure_installed(self) -> None:
        _ = self.java  # fail early, before a download, if there is no JVM
        marker = self.libs.parent / _COMPLETE
        if marker.exists():
            return
        mvn = binaries.find_mvn()
        log.info("fetching Kafka %s jars from Maven Central into %s", KAFKA_VERSION, self.libs)
        # A missing marker means a previous fetch may have stopped half way: start clean.
        shutil.rmtree(self.libs, ignore_errors=True)
        self.libs.mkdir(parents=True)
        # Maven writes target/ next to the pom, so run a copy that lives in the cache.
        pom = self.libs.parent / "pom.xml"
        shutil.copyfile(POM, pom)
        argv = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies"]
        argv += [f"-DoutputDirectory={self.libs}", "-DincludeScope=runtime"]
        _run(argv, "fetching the Kafka jars with Maven")
        marker.write_text(f"kafka {KAFKA_VERSION}\n")

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.properties.write_text(render_server_properties(self.settings, self.data_dir))
        if not (self.data_dir / "meta.properties").exists():
            self._format_storage()

    def _format_storage(self) -> None:
        log.info("formatting Kafka storage in %s", self.data_dir)
        argv = [self.java, "-cp", f"{self.libs}/*", "kafka.tools.StorageTool", "format"]
        argv += ["--standalone", "-t", random_cluster_id(), "-c", str(self.properties)]
        # Formatting is once per data folder. Changing ports later is fine: a single
        # voter re-announces its controller endpoint at startup (checked on 4.1.1).
        _run(argv, "formatting Kafka storage")

    def command(self) -> list[str]:
        return [
            self.java,
            "-Xmx1g",
            "-Xms256m",
            # Kafka's own start script's collector settings (kafka-run-class.sh): G1 aims
            # at 20 ms pauses rather than its default 200, which a broker on the request
            # path would add to every request in flight.
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
            f"-Dkafka.logs.dir={self.logs_dir}",
            "-cp",
            f"{self.libs}/*",
            "kafka.Kafka",
            str(self.properties),
        ]

    def is_healthy(self) -> bool:
        # A plain TCP probe first: librdkafka would log a connection error per attempt.
        if not process.port_in_use(HOST, self.settings.kafka_port):
            return False
        return broker_answers(self.settings.kafka_bootstrap)


def broker_answers(bootstrap: str, timeout_s: float = 2.0) -> bool:
    """True if a metadata request returns at least one broker."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return bool(metadata.brokers)


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        raise StackError(f"{what} failed (exit {result.returncode}):\n{output}")
