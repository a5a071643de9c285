"""One Redis or a Redis Cluster behind the online store, told apart by the URL's scheme.

- ``redis://[user:password@]host:port/db`` (``rediss://`` with TLS): one Redis.
- ``redis+cluster://[user:password@]host:port[,host:port...]`` (``rediss+cluster://``
  with TLS): a Redis Cluster. The nodes listed are where discovery starts; any one
  that answers is enough, the client learns the others and the slot map from it.

One variable (``STREAMREC_REDIS_URL``) thus tells every role which kind of store it
talks to, as Feast's ``redis_type`` does for Feast (``jobs.feature_writer.feast_env``
derives that from the same URL). A cluster has database 0 only, so its URL has no
path; the only query argument it takes is ``ssl_ca_certs``.

The clients share the read API the readers use (pipelines of HMGET, ZREVRANGE,
SMISMEMBER), so readers take either. Writes that run Lua scripts need one slot per
call on a cluster: :mod:`runtime.online.cluster_calls` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

# What the readers and the writer accept: one Redis or a cluster client.
OnlineClient = Union[redis.Redis, RedisCluster]  # noqa: UP007 (a runtime alias mypy reads)

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}  # scheme -> TLS
DEFAULT_PORT = 6379
_CLUSTER_QUERY = frozenset({"ssl_ca_certs"})


@dataclass(frozen=True)
class ClusterAddress:
    """A cluster URL taken apart: where discovery starts and how to log in."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ssl_ca_certs: str | None = None


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def parse_cluster_url(url: str) -> ClusterAddress:
    """The parts of a ``redis+cluster://`` URL; ValueError naming what is wrong (pure).

    Messages never repeat the URL: it may hold a password.
    """
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"a cluster URL starts with redis+cluster:// or rediss+cluster://, "
                         f"not {parts.scheme}://")  # fmt: skip
    if parts.path.strip("/") not in ("", "0"):
        raise ValueError("a Redis Cluster has database 0 only; leave the URL's path empty")
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":")
    nodes = tuple(_host_port(node) for node in hosts.split(","))
    query = dict(parse_qsl(parts.query))
    unknown = sorted(set(query) - _CLUSTER_QUERY)
    if unknown:
        raise ValueError(f"unknown cluster URL argument(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(_CLUSTER_QUERY))}")  # fmt: skip
    return ClusterAddress(
        nodes=nodes,
        username=unquote(username) or None,
        password=unquote(password) or None,
        tls=CLUSTER_SCHEMES[parts.scheme],
        ssl_ca_certs=query.get("ssl_ca_certs"),
    )


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host:
        host, port = port, str(DEFAULT_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"cluster node {text!r} is not host:port")
    return host, int(port)


def connect(url: str, *, fail_fast: bool = False, **kwargs: Any) -> OnlineClient:
    """A client for ``url`` (one Redis or a cluster); ``kwargs`` go to every connection.

    ``fail_fast``: no retry inside the client, so the caller's own breaker or backoff
    decides (redis-py retries with a backoff of up to seconds by default). A cluster
    client still follows MOVED and ASK replies, which are answers, not failures.
    """
    if not is_cluster_url(url):
        if fail_fast:
            kwargs["retry"] = Retry(NoBackoff(), 0)
        single: redis.Redis = redis.Redis.from_url(url, **kwargs)
        return single
    address = parse_cluster_url(url)
    if address.tls:
        kwargs.update(ssl=True, ssl_ca_certs=address.ssl_ca_certs)
    if fail_fast:
        kwargs["cluster_error_retry_attempts"] = 0
    nodes = [ClusterNode(host, port) for host, port in address.nodes]  # type: ignore[no-untyped-call]
    cluster: RedisCluster = RedisCluster(
        startup_nodes=nodes, username=address.username, password=address.password, **kwargs
    )
    return cluster


def is_cluster(client: OnlineClient) -> bool:
    return isinstance(client, RedisCluster)


def node_client(client: OnlineClient, key: bytes | str) -> redis.Redis:
    """The Redis that serves ``key``: ``client`` itself, or the cluster node owning its slot.

    For what a cluster client cannot do across nodes but one node can do for one
    slot, such as a MULTI/EXEC transaction on one key.
    """
    if isinstance(client, RedisCluster):
        cluster: Any = client  # redis.cluster has no type hints
        node: redis.Redis = cluster.get_redis_connection(cluster.get_node_from_key(key))
        return node
    assert isinstance(client, redis.Redis)
    return client
