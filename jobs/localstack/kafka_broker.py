"""Kafka 4.1 brokers in KRaft mode, run from Maven Central jars (no Docker).

One combined broker+controller by default; ``STREAMREC_KAFKA_BROKERS=3`` starts
three, a replicated cluster (replication factor 3, ``min.insync.replicas=2``).

In the secured mode (``STREAMREC_STACK_SECURE``) clients reach it over SASL_SSL with
SCRAM-SHA-512 users made at format time, the broker's own controller traffic goes
over mutual TLS, and an authorizer refuses whatever kafka_acls.py does not grant.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from jobs.localstack import binaries, process
from jobs.localstack.credentials import Credentials, ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings
from jobs.localstack.tls import TlsFiles, ensure_certificates

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.1.1"
_HERE = Path(__file__).resolve().parent
POM = _HERE / "kafka-pom.xml"
LOG4J2_CONFIG = _HERE / "kafka-log4j2.properties"
_COMPLETE = ".complete"

SCRAM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 8192
ADMIN = "admin"
# The principal the broker's TLS client certificate maps to on the controller listener.
CONTROLLER_PRINCIPAL = "User:CN=127.0.0.1"
CLIENT_LISTENER = "SASL_SSL"
PLAINTEXT_MODE = "plaintext"


def render_server_properties(settings: StackSettings, data_dir: Path, node: int = 1) -> str:
    """server.properties for combined broker+controller node ``node`` on loopback.

    One node (the default) is its own single-voter quorum. Several are a static
    quorum of them all, every topic on ``kafka_replication`` brokers and a write
    acknowledged (acks=all, librdkafka's default) once ``min_in_sync`` of them have it,
    so one broker can die without losing an acknowledged record or stopping writes.
    """
    port, ctrl = settings.kafka_node_ports(node)
    replicas = settings.kafka_replication
    in_sync = min_in_sync(replicas)
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node),
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{ctrl}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": str(replicas),
        "min.insync.replicas": str(in_sync),
        "offsets.topic.replication.factor": str(replicas),
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": str(in_sync),
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": str(in_sync),
        # Nobody else will join the group, so do not wait 3 s for them.
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
    }
    if settings.kafka_brokers == 1:
        props["controller.quorum.bootstrap.servers"] = f"{HOST}:{ctrl}"
    else:
        nodes = range(1, settings.kafka_brokers + 1)
        voters = (f"{n}@{HOST}:{settings.kafka_node_ports(n)[1]}" for n in nodes)
        props["controller.quorum.voters"] = ",".join(voters)
    lines = ["# Written by jobs.localstack on every start; edits are overwritten."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def min_in_sync(replicas: int) -> int:
    """Replicas that must hold a write: all but one, so one broker may be down (at least 1)."""
    return max(1, replicas - 1)


def broker_name(settings: StackSettings, node: int) -> str:
    """``kafka`` for a single broker, ``kafka-1``... when there are several."""
    return "kafka" if settings.kafka_brokers == 1 else f"kafka-{node}"


def render_secured_properties(
    settings: StackSettings, data_dir: Path, tls: TlsFiles, admin_password: str
) -> str:
    """server.properties of the secured mode: the plaintext one with its listeners replaced."""
    port, ctrl = settings.kafka_port, settings.kafka_controller_port
    jaas = scram_jaas(ADMIN, admin_password)
    secured = {
        "listeners": f"{CLIENT_LISTENER}://{HOST}:{port},CONTROLLER://{HOST}:{ctrl}",
        "advertised.listeners": f"{CLIENT_LISTENER}://{HOST}:{port}",
        "inter.broker.listener.name": CLIENT_LISTENER,
        # SCRAM users live in the metadata the controller serves, so the controller's
        # own listener cannot use them: it takes only clients holding a certificate of
        # the stack's CA (the broker presents its server certificate).
        "listener.security.protocol.map": f"CONTROLLER:SSL,{CLIENT_LISTENER}:SASL_SSL",
        "listener.name.controller.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": SCRAM,
        "sasl.mechanism.inter.broker.protocol": SCRAM,
        f"listener.name.{CLIENT_LISTENER.lower()}.{SCRAM.lower()}.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_cert),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN};{CONTROLLER_PRINCIPAL}",
        "allow.everyone.if.no.acl.found": "false",
        # Topics come from the parts' `ensure_topics`, under the ACLs' CREATE grants.
        "auto.create.topics.enable": "false",
    }
    kept = _parse_properties(render_server_properties(settings, data_dir))
    props = kept | secured
    lines = ["# Written by jobs.localstack on every start; edits are overwritten. Secret: 0600."]
    lines += [f"{key}={_properties_value(value)}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def scram_jaas(user: str, password: str) -> str:
    """The JAAS line of a SCRAM login; quotes and backslashes escaped as JAAS reads them."""

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return f"{module} required username={quoted(user)} password={quoted(password)};"


def _properties_value(text: str) -> str:
    """``text`` as a java.util.Properties value (read as ISO-8859-1, backslash escapes)."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif not " " <= char <= "~":  # control characters and anything beyond ASCII
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else _surrogates(char))
        else:
            out.append(char)
    escaped = "".join(out)
    # Properties drops a value's leading blanks unless escaped.
    return "\\" + escaped if escaped.startswith(" ") else escaped


def _surrogates(char: str) -> str:
    pair = char.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(pair[i : i + 2], 'big'):04x}" for i in (0, 2))


def _parse_properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")
    return {key: value for key, value in pairs}


def scram_argument(user: str, password: str, salt: bytes, iterations: int) -> str:
    """StorageTool's ``--add-scram`` value, with the salted password computed here.

    The tool's own ``password=`` cannot hold a comma (it splits on them, quotes or
    not); the salted password is base64, so every password survives. SCRAM's
    salted password is PBKDF2-HMAC over the UTF-8 password, as Kafka's ScramFormatter.
    """
    if any(char in user for char in ',=[]"\n'):
        raise StackError(f"Kafka user name {user!r} cannot be given to the storage tool")
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    parts = {
        "name": user,
        "salt": base64.b64encode(salt).decode(),
        "saltedpassword": base64.b64encode(salted).decode(),
        "iterations": str(iterations),
    }
    return f"{SCRAM}=[" + ",".join(f"{k}={v}" for k, v in parts.items()) + "]"


def client_properties(settings: StackSettings, user: str) -> dict[str, str]:
    """librdkafka properties with which ``user`` reaches the secured broker.

    Empty in the plaintext mode, so callers can merge them unconditionally.
    """
    if not settings.secure:
        return {}
    passwords = ensure_credentials(settings.secrets_dir).kafka
    if user not in passwords:
        raise StackError(f"no Kafka user {user!r}; the users are {', '.join(passwords)}")
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": SCRAM,
        "sasl.username": user,
        "sasl.password": passwords[user],
        "ssl.ca.location": str(TlsFiles.under(settings.secrets_dir).ca_cert),
    }


def kafka_config_value(properties: Mapping[str, str]) -> str:
    """``properties`` as STREAMREC_KAFKA_CONFIG text: ``name=value,...``.

    Backslashes and commas in names and values are escaped (``\\\\``, ``\\,``), as
    runtime.settings.parse_properties reads them.
    """

    def escaped(text: str) -> str:
        return text.replace("\\", "\\\\").replace(",", "\\,")

    return ",".join(f"{escaped(name)}={escaped(value)}" for name, value in properties.items())


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

    def __init__(self, settings: StackSettings, node: int = 1) -> None:
        super().__init__(settings)
        self.node = node
        self.name = broker_name(settings, node)
        self.libs = settings.cache_dir / f"kafka-{KAFKA_VERSION}" / "libs"
        self.data_dir = self.dir / "data"
        self.logs_dir = self.dir / "logs"
        self.properties = self.dir / "server.properties"
        # Which mode formatted data/: absent means plaintext (and data/ older than it).
        self.mode_marker = self.dir / "data.mode"
        self._java: str | None = None

    @classmethod
    def instances(cls, settings: StackSettings) -> list[Service]:
        """One service per broker; `kafka` names them all (stack.select)."""
        return [cls(settings, node) for node in range(1, settings.kafka_brokers + 1)]

    @property
    def log_path(self) -> Path:
        return self.logs_dir / "server.log"

    def ports(self) -> tuple[int, ...]:
        return self.settings.kafka_node_ports(self.node)

    def endpoint(self) -> str:
        return self.settings.kafka_bootstrap

    def exports(self) -> dict[str, str]:
        # Never a password here: in the secured mode a role's config comes from role_exports.
        return {"STREAMREC_KAFKA_BOOTSTRAP_SERVERS": self.settings.kafka_bootstrap}

    def role_exports(self, user: str) -> dict[str, str]:
        """The variables with which a part running as ``user`` reaches the broker."""
        exports = self.exports()
        properties = client_properties(self.settings, user)
        if properties:
            exports["STREAMREC_KAFKA_CONFIG"] = kafka_config_value(properties)
        return exports

    def admin_config(self) -> dict[str, str]:
        """librdkafka configuration of the stack's own admin client."""
        config = {"bootstrap.servers": self.settings.kafka_bootstrap}
        return config | client_properties(self.settings, ADMIN)

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
        formatted = (self.data_dir / "meta.properties").exists()
        if not self.settings.secure:
            if formatted:
                self._check_mode(PLAINTEXT_MODE)
            text = render_server_properties(self.settings, self.data_dir, self.node)
            self.properties.write_text(text)
            if not formatted:
                self.mode_marker.unlink(missing_ok=True)
                self._format_storage()
            return
        credentials = ensure_credentials(self.settings.secrets_dir)
        mode = secured_mode(credentials)
        if formatted:
            self._check_mode(mode)
        tls = ensure_certificates(self.settings.secrets_dir)
        text = render_secured_properties(
            self.settings, self.data_dir, tls, credentials.kafka[ADMIN]
        )
        _write_private(self.properties, text)
        if not formatted:
            self._format_storage(credentials.kafka)
            self.mode_marker.write_text(mode + "\n")

    def _check_mode(self, wanted: str) -> None:
        """Refuse data/ formatted for the other mode, or for other SCRAM passwords."""
        found = self.mode_marker.read_text().strip() if self.mode_marker.exists() else ""
        found = found or PLAINTEXT_MODE
        if found == wanted:
            return
        variable = self.settings.variable("secure")
        if found == PLAINTEXT_MODE:
            why = f"was formatted in the plaintext mode, so it has no SCRAM users; unset {variable}"
        elif wanted == PLAINTEXT_MODE:
            why = f"was formatted in the secured mode; set {variable}=1"
        else:
            why = (
                "holds SCRAM users made with other passwords (the credentials under "
                f"{self.settings.secrets_dir} were made anew since)"
            )
        raise StackError(
            f"Kafka's data folder {self.data_dir} {why}, or delete that folder (its topics "
            "go with it) to have it formatted again."
        )

    def _format_storage(self, users: Mapping[str, str] | None = None) -> None:
        log.info("formatting Kafka storage in %s", self.data_dir)
        argv = ["-cp", f"{self.libs}/*", "kafka.tools.StorageTool", "format"]
        if self.settings.kafka_brokers == 1:
            argv += ["--standalone", "-t", random_cluster_id(), "-c", str(self.properties)]
        else:
            # A static quorum: the voters are in server.properties, the id is shared.
            argv += ["-t", self._shared_cluster_id(), "-c", str(self.properties)]
        for user, password in (users or {}).items():
            salt = secrets.token_bytes(32)
            argv += ["--add-scram", scram_argument(user, password, salt, SCRAM_ITERATIONS)]
        if not users:
            # Formatting is once per data folder. Changing ports later is fine: a single
            # voter re-announces its controller endpoint at startup (checked on 4.1.1).
            _run([self.java, *argv], "formatting Kafka storage")
            return
        # Salted passwords log a client in, so they go through a 0600 argument file
        # rather than a command line every local user can read in /proc.
        argfile = self.dir / "format.args"
        _write_private(argfile, "\n".join(argv) + "\n")
        try:
            _run([self.java, f"@{argfile}"], "formatting Kafka storage")
        finally:
            argfile.unlink(missing_ok=True)

    def _shared_cluster_id(self) -> str:
        """The cluster id every node of a multi-broker stack formats with (made once)."""
        path = self.settings.home / "kafka-cluster.id"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(random_cluster_id() + "\n")
        return path.read_text().strip()

    def command(self) -> list[str]:
        return [
            self.java,
            f"-Xms{self.settings.kafka_heap_mb}m",
            f"-Xmx{self.settings.kafka_heap_mb}m",
            "-XX:+AlwaysPreTouch",
            # Kafka's own start script's collector settings (kafka-run-class.sh): G1 aims
            # at 20 ms pauses rather than its default 200, which a broker on the request
            # path would add to every request in flight.
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent",
            *(["-XX:TieredStopAtLevel=1"] if self.settings.kafka_jit == "c1" else []),
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
            f"-Dkafka.logs.dir={self.logs_dir}",
            "-cp",
            f"{self.libs}/*",
            "kafka.Kafka",
            str(self.properties),
        ]

    def is_healthy(self) -> bool:
        port, ctrl = self.settings.kafka_node_ports(self.node)
        brokers = self.settings.kafka_brokers
        if self.node < brokers:
            # A quorum of several forms only once a majority runs, and the stack starts
            # them one by one: the earlier nodes are up once their controller listens.
            return process.port_in_use(HOST, ctrl)
        # A plain TCP probe first: librdkafka would log a connection error per attempt.
        if not process.port_in_use(HOST, port):
            return False
        # The last node: healthy once every broker has registered with the quorum.
        return broker_answers(
            self.settings.kafka_bootstrap, config=self.admin_config(), brokers=brokers
        )

    def after_start(self) -> None:
        if self.settings.secure:
            from jobs.localstack.kafka_acls import acl_bindings, apply_acls

            apply_acls(self.admin_config(), acl_bindings())


def secured_mode(credentials: Credentials) -> str:
    """What the mode marker records: secured, and which passwords the users were made with.

    A digest of the passwords, not the passwords: the marker is not a secret file.
    """
    text = json.dumps(dict(sorted(credentials.kafka.items())))
    return "secured " + hashlib.sha256(text.encode()).hexdigest()[:16]


def broker_answers(
    bootstrap: str,
    timeout_s: float = 2.0,
    config: Mapping[str, str] | None = None,
    brokers: int = 1,
) -> bool:
    """True if a metadata request returns at least ``brokers`` brokers (``config``: credentials)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap, "log_level": 0})
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return len(metadata.brokers) >= brokers


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        raise StackError(f"{what} failed (exit {result.returncode}):\n{output}")


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only, from the first byte on."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
