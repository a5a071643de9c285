"""A throwaway Redis (the Feast online store) from the system's redis-server binary.

With ``STREAMREC_REDIS_CLUSTER`` it is a Redis Cluster instead: six processes
(``redis-1`` .. ``redis-6``) on consecutive ports, joined by the last one's
``after_start`` (:mod:`jobs.localstack.redis_cluster`).

In the secured mode (``STREAMREC_STACK_SECURE``) it listens with TLS only and
knows the ACL users of :mod:`jobs.localstack.redis_acl`; :func:`redis_url_for`
gives the URL one principal connects with.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import redis

from jobs.localstack import binaries
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.redis_acl import render_acl_file
from jobs.localstack.redis_cluster import form_cluster
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, REDIS_CLUSTER_MASTERS, REDIS_CLUSTER_NODES, StackSettings
from jobs.localstack.tls import TlsFiles, ensure_certificates

REDIS_MAXMEMORY = "2gb"
ACL_FILE = "users.acl"
# How long a master may be unreachable before its replica is promoted. Redis's default
# (15 s) suits networks; on one machine a dead process is dead, and a short timeout
# keeps the slots it served unwritable for about 2-4 s instead of 15-30.
CLUSTER_NODE_TIMEOUT_MS = 2000


def _listener_lines(
    settings: StackSettings, data_dir: Path, tls: TlsFiles | None, port: int
) -> list[str]:
    if tls is None:
        return [f"port {port}"]
    return [
        # No plaintext port at all: a client that does not speak TLS cannot even say hello.
        "port 0",
        f"tls-port {port}",
        f'tls-cert-file "{tls.server_cert}"',
        f'tls-key-file "{tls.server_key}"',
        f'tls-ca-cert-file "{tls.ca_cert}"',
        # Clients prove who they are with ACL passwords, not certificates.
        "tls-auth-clients no",
        f'aclfile "{data_dir / ACL_FILE}"',
    ]


def _cluster_lines() -> list[str]:
    return [
        "cluster-enabled yes",
        # The node's view of the cluster (its id, peers, slots), rewritten by Redis
        # itself: a restarted node rejoins as what it was.
        "cluster-config-file nodes.conf",
        f"cluster-node-timeout {CLUSTER_NODE_TIMEOUT_MS}",
        # The slots of a master that is down fail, the others keep serving: one lost
        # shard must not stop every user's features.
        "cluster-require-full-coverage no",
    ]


def render_redis_conf(
    settings: StackSettings, data_dir: Path, tls: TlsFiles | None = None, port: int | None = None
) -> str:
    """Config for a loopback-only instance that stays in the foreground and keeps its data.

    With ``tls`` (the secured mode) the port speaks TLS only and the users come
    from the ACL file beside the config, which :meth:`RedisService.prepare` writes.
    ``port`` (default the Redis port) names a cluster node's, and makes it one.
    """
    cluster = port is not None
    lines = [
        "# Written by jobs.localstack on every start; edits are overwritten.",
        *_listener_lines(settings, data_dir, tls, settings.redis_port if port is None else port),
        *(_cluster_lines() if cluster else []),
        f"bind {HOST}",
        f'dir "{data_dir}"',
        # The online store survives a Redis restart: nothing rebuilds it from Kafka (the
        # writer's offsets are committed), and the out-of-stock set lives only here.
        # With `always`, Redis writes and fsyncs the AOF before it replies, so neither a
        # killed process nor a crashed machine loses an acknowledged write. `everysec`
        # postpones the write itself (up to 2 s) while an fsync is in flight, and a kill
        # -9 on a loaded box then lost an out-of-stock mark Redis had acknowledged. The
        # cost is one fsync per event-loop pass that wrote (0.35 ms on this box's disk).
        'save ""',
        "appendonly yes",
        "appendfsync always",
        # Feature rows are overwritten at the event rate (about 0.75 KB of AOF per event).
        # With Redis's default (rewrite once the file doubles past 64 MB) a store of 300k
        # keys was rewritten every 10-20 s at 5,000 events/s: each rewrite forks and
        # serialises the whole store on the cores the pipeline shares, and the fresh
        # view's p99 from event to readable went from 0.2-0.9 s to 1.2-14 s. Past 1 GB a
        # rewrite comes about every 5 minutes at that rate; a restart replays at most that.
        "auto-aof-rewrite-min-size 1gb",
        # Bounded: feature rows and co-visitation sets carry TTLs, so at the limit the
        # least recently used of them go first; the out-of-stock set has none and stays.
        f"maxmemory {REDIS_MAXMEMORY}",
        "maxmemory-policy volatile-lru",
        "daemonize no",
        # Log to stdout, which the stack manager sends to redis.log.
        'logfile ""',
        # Keep argv (it names this config file) so the pid guard can recognise us.
        "set-proc-title no",
    ]
    return "\n".join(lines) + "\n"


def render_replica_conf(settings: StackSettings, data_dir: Path) -> str:
    """Config for the read replica of the one Redis (``STREAMREC_REDIS_REPLICA_PORT``)."""
    lines = [
        "# Written by jobs.localstack on every start; edits are overwritten.",
        f"port {settings.redis_replica_port}",
        f"bind {HOST}",
        f'dir "{data_dir}"',
        f"replicaof {HOST} {settings.redis_port}",
        # Reads only, and no files: its data is the primary's, which a restart copies again.
        "replica-read-only yes",
        'save ""',
        "appendonly no",
        # While its link to the primary is down (a primary restart, the first copy) it
        # refuses reads rather than answer with rows of unknown age: the worker then
        # answers from what it has, flagged, as it does when the primary is down.
        "replica-serve-stale-data no",
        f"maxmemory {REDIS_MAXMEMORY}",
        "daemonize no",
        'logfile ""',
        "set-proc-title no",
    ]
    return "\n".join(lines) + "\n"


class RedisService(Service):
    name = "redis"

    def __init__(self, settings: StackSettings, node: int = 0) -> None:
        """``node`` 0: the one Redis; 1..6: that node of the cluster."""
        super().__init__(settings)
        self.node = node
        if node:
            self.name = f"redis-{node}"
        self.port = settings.redis_port + max(node - 1, 0)
        self.conf = self.dir / "redis.conf"
        self._binary: str | None = None

    @classmethod
    def instances(cls, settings: StackSettings) -> list[Service]:
        """One Redis (and its read replica when one is set), or the cluster's six nodes;
        `redis` names them all (stack.select)."""
        if not settings.redis_cluster:
            replica = [RedisReplicaService(settings)] if settings.redis_replica_port else []
            return [cls(settings), *replica]
        return [cls(settings, node) for node in range(1, REDIS_CLUSTER_NODES + 1)]

    @property
    def stdout_path(self) -> Path:
        return self.dir / "redis.log"

    def ports(self) -> tuple[int, ...]:
        if self.node:  # and the cluster bus, which Redis puts 10000 above
            return (self.port, self.port + 10000)
        return (self.port,)

    def endpoint(self) -> str:
        if self.settings.secure:
            return f"rediss://{HOST}:{self.settings.redis_port}/0"
        return self.settings.redis_url

    def exports(self) -> dict[str, str]:
        # Secured: no URL here, since it would carry a password; each role gets its own
        # from redis_url_for.
        if self.settings.secure:
            return {}
        return {"STREAMREC_REDIS_URL": self.settings.redis_url}

    def url_for(self, user: str) -> str:
        return redis_url_for(self.settings, user)

    def ensure_installed(self) -> None:
        self._binary = binaries.ensure_redis_server()

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tls = None
        if self.settings.secure:
            tls = ensure_certificates(self.settings.secrets_dir)
            passwords = ensure_credentials(self.settings.secrets_dir).redis
            write_private(self.dir / ACL_FILE, render_acl_file(passwords))
        port = self.port if self.node else None
        self.conf.write_text(render_redis_conf(self.settings, self.dir, tls, port))

    def command(self) -> list[str]:
        binary = self._binary or binaries.ensure_redis_server()
        return [binary, str(self.conf)]

    def is_healthy(self) -> bool:
        if self.settings.secure:
            # The least privileged user that may PING: health needs no more.
            client = redis.Redis.from_url(
                self.url_for("reader"), socket_timeout=1, socket_connect_timeout=1
            )
        else:
            client = redis.Redis(
                host=HOST, port=self.port, socket_timeout=1, socket_connect_timeout=1
            )
        try:
            return client.ping() is True
        except redis.RedisError:
            return False
        finally:
            client.close()

    def after_start(self) -> None:
        # The last node joins them all; the earlier ones are up by then (start order).
        if self.node == REDIS_CLUSTER_NODES:
            form_cluster(self.settings.redis_node_ports(), REDIS_CLUSTER_MASTERS)


class RedisReplicaService(RedisService):
    """The read replica of the one Redis; started after it, stopped before it. Installed,
    run and logged as the primary is, from a config of its own."""

    name = "redis-replica"

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.port = settings.redis_replica_port

    def endpoint(self) -> str:
        return self.settings.redis_replica_url

    def exports(self) -> dict[str, str]:
        return {"STREAMREC_WORKER_REDIS_READ_URL": self.settings.redis_replica_url}

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(render_replica_conf(self.settings, self.dir))

    def is_healthy(self) -> bool:
        """Up once it holds the primary's data: before its first copy it refuses reads."""
        client = redis.Redis(host=HOST, port=self.port, socket_timeout=1, socket_connect_timeout=1)
        try:
            replication: dict[str, object] = client.info("replication")  # type: ignore[assignment]
            return replication.get("master_link_status") == "up"
        except redis.RedisError:
            return False
        finally:
            client.close()


def redis_url_for(settings: StackSettings, user: str) -> str:
    """The URL ``user`` (admin, writer, reader, router) connects with; plain when not secured.

    Secured: ``rediss://<user>:<password>@127.0.0.1:<port>/0?ssl_ca_certs=<ca.pem>``,
    which ``redis.Redis.from_url`` takes as it is (unknown query arguments become
    keyword arguments of the connection). It holds a password: never log it.
    """
    if not settings.secure:
        return settings.redis_url
    passwords = ensure_credentials(settings.secrets_dir).redis
    if user not in passwords:
        raise StackError(f"no Redis user {user!r}; known: {', '.join(passwords)}")
    ca = TlsFiles.under(settings.secrets_dir).ca_cert
    secret = quote(passwords[user], safe="")
    return (
        f"rediss://{quote(user, safe='')}:{secret}@{HOST}:{settings.redis_port}/0"
        f"?ssl_ca_certs={quote(str(ca), safe='/')}"
    )


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only, from the first byte on."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
