"""Telling one Redis from a cluster by the URL, and taking a cluster URL apart."""

import pytest
from redis.exceptions import RedisClusterException

from runtime.online.connect import ClusterAddress, connect, is_cluster_url, parse_cluster_url


def test_the_scheme_says_which_kind_of_store() -> None:
    assert not is_cluster_url("redis://127.0.0.1:6379/0")
    assert not is_cluster_url("rediss://u:p@host:6380/0")
    assert is_cluster_url("redis+cluster://127.0.0.1:7000")
    assert is_cluster_url("rediss+cluster://host:7000,host:7001")


def test_a_cluster_url_names_the_nodes_discovery_starts_from() -> None:
    url = "rediss+cluster://app:p%40ss@a:7000,b:7001,c?ssl_ca_certs=/ca.pem"
    assert parse_cluster_url(url) == ClusterAddress(
        nodes=(("a", 7000), ("b", 7001), ("c", 6379)),
        username="app",
        password="p@ss",
        tls=True,
        ssl_ca_certs="/ca.pem",
    )
    assert parse_cluster_url("redis+cluster://a:7000/0").nodes == (("a", 7000),)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+cluster://a:7000/3", "database 0 only"),
        ("redis+cluster://a:port", "not host:port"),
        ("redis+cluster://a:7000,", "not host:port"),
        ("redis+cluster://a:99999", "not host:port"),
        ("redis+cluster://a:7000?db=2", "unknown cluster URL argument"),
        ("redis://a:7000", r"starts with redis\+cluster://"),
    ],
)
def test_a_bad_cluster_url_says_what_is_wrong_without_repeating_it(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_cluster_url(url.replace("//", "//user:secret@"))
    assert "secret" not in str(caught.value)


def test_a_cluster_client_discovers_its_nodes_at_once_and_says_where_it_failed() -> None:
    # Nothing listens on port 1; the integration tests connect for real.
    with pytest.raises(RedisClusterException, match=r"127\.0\.0\.1:1"):
        connect("redis+cluster://127.0.0.1:1", socket_connect_timeout=0.2)
