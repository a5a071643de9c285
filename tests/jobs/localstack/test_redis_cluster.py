"""Forming the local Redis Cluster: the slot plan and the nodes' config (no server)."""

import itertools
from pathlib import Path

import pytest

from jobs.localstack import StackError, StackSettings
from jobs.localstack.redis_cluster import SLOTS, slot_ranges
from jobs.localstack.redis_server import render_redis_conf


@pytest.mark.parametrize("masters", [1, 3, 5])
def test_slot_ranges_cover_every_slot_once_in_order(masters: int) -> None:
    ranges = slot_ranges(masters)
    assert len(ranges) == masters
    assert ranges[0][0] == 0 and ranges[-1][1] == SLOTS - 1
    assert all(end + 1 == start for (_, end), (start, _) in itertools.pairwise(ranges))
    sizes = [end - start + 1 for start, end in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_a_cluster_node_config_enables_cluster_mode_on_its_own_port(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, redis_port=7000, redis_cluster=True)
    conf = render_redis_conf(settings, tmp_path, port=7003).splitlines()
    assert "port 7003" in conf and "cluster-enabled yes" in conf
    assert "cluster-config-file nodes.conf" in conf
    # Durability stays what one Redis has: every acknowledged write is on disk.
    assert "appendfsync always" in conf
    single = render_redis_conf(StackSettings(tmp_path, tmp_path, redis_port=7000), tmp_path)
    assert "cluster-enabled yes" not in single and "port 7000" in single


def test_the_secured_mode_refuses_a_cluster_it_cannot_secure_yet(tmp_path: Path) -> None:
    with pytest.raises(StackError, match=r"STREAMREC_REDIS_CLUSTER.*secured mode"):
        StackSettings(tmp_path, tmp_path, redis_cluster=True, secure=True)
