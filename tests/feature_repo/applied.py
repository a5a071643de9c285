"""``feast apply`` of a temporary copy of feature_repo/, on the test stack's Redis.

The copy gets its own project name, so its rows never meet anyone else's in a
shared Redis, and its registry lives in the temporary folder.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from feast import FeatureStore

from jobs.feature_writer.feast_env import (
    FEAST_REDIS_ENV,
    FEAST_REGISTRY_ENV,
    feast_apply,
    load_store,
)
from runtime.online.connect import OnlineClient, connect
from tests.conftest import Endpoints, RedisClusterStack
from tests.support import requirements

REPO = Path(__file__).resolve().parents[2] / "feature_repo"


@dataclass(frozen=True)
class AppliedRepo:
    path: Path
    project: str
    redis_url: str
    store: FeatureStore
    client: OnlineClient


def applied_copy(tmp: Path, redis_url: str) -> AppliedRepo:
    repo = tmp / "feature_repo"
    shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    project = f"streamrec_t{uuid.uuid4().hex[:8]}"
    yaml_path = repo / "feature_store.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("project: streamrec", f"project: {project}"))
    env = {
        **os.environ,
        "STREAMREC_REDIS_URL": redis_url,
        "STREAMREC_STACK_HOME": str(tmp / "stack"),
    }
    env.pop(FEAST_REDIS_ENV, None)
    env.pop(FEAST_REGISTRY_ENV, None)
    # feast_apply and load_store derive Feast's variables from env themselves.
    done = feast_apply(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp / "stack" / "feast" / "registry.db").is_file()
    store = load_store(repo, env)
    return AppliedRepo(repo, project, redis_url, store, connect(redis_url))


@pytest.fixture(scope="session")
def feast_repo(stack: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppliedRepo]:
    redis_url = requirements.redis_url(stack.redis_url)
    applied = applied_copy(tmp_path_factory.mktemp("feast"), redis_url)
    yield applied
    applied.client.close()


@pytest.fixture(scope="session")
def feast_cluster_repo(
    redis_cluster: RedisClusterStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppliedRepo]:
    """The same, on a Redis Cluster (Feast's ``redis_type: redis_cluster``)."""
    applied = applied_copy(tmp_path_factory.mktemp("feast-cluster"), redis_cluster.url)
    yield applied
    applied.client.close()
