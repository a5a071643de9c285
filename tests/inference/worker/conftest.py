"""Session fixtures of the worker tests: a real-data world in Redis, topics, worker processes."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient, connect
from tests.conftest import Endpoints
from tests.feature_repo.applied import feast_cluster_repo, feast_repo
from tests.inference.worker.harness import WorkerProcess, WorkerTopics, worker_env
from tests.inference.worker.world import (
    World,
    build_world,
    changelog,
    stream_events,
    write_features,
)
from tests.support import requirements

__all__ = ["feast_cluster_repo", "feast_repo"]
WORLD_EVENTS = 3000


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    requirements.dataset("taobao")
    events = stream_events(WORLD_EVENTS)
    return build_world(tmp_path_factory.mktemp("worker-model"), events)


@pytest.fixture(scope="session")
def redis_client(stack: Endpoints) -> Iterator[OnlineClient]:
    client = connect(requirements.redis_url(stack.redis_url))
    yield client
    client.close()


@pytest.fixture(scope="session")
def world_project(redis_client: OnlineClient, world: World) -> str:
    """A Feast project of its own in Redis holding the world's features."""
    project = f"wt{uuid.uuid4().hex[:8]}"
    assert write_features(redis_client, project, changelog(world.events)) > 0
    return project


StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def start_worker(
    stack: Endpoints, kafka: KafkaSettings, world: World, world_project: str, tmp_path: Path
) -> Iterator[StartWorker]:
    """Starts ``python -m inference.worker`` subprocesses; all are killed at the end."""
    started: list[WorkerProcess] = []

    def start(
        topics: WorkerTopics,
        redis_url: str | None = None,
        triton: tuple[str, str] = ("127.0.0.1:1", "ranker_python"),
        kafka_at: KafkaSettings | None = None,
        **worker: str,
    ) -> WorkerProcess:
        redis_url = redis_url or stack.redis_url
        env = worker_env(
            kafka_at or kafka, redis_url, world_project, world.model_dir, topics, triton, **worker
        )
        process = WorkerProcess(env, tmp_path / f"worker-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()
