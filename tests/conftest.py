"""Session fixtures: the real local stack (or an existing one), and unique topics per test.

Set ``STREAMREC_TEST_KAFKA_BOOTSTRAP_SERVERS`` (and ``STREAMREC_TEST_REDIS_URL``)
to run the integration tests against a stack that is already up; otherwise the
fixture starts Kafka and Redis on free ports in a temporary home and stops them
at the end of the session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# First, before any test module imports the Feast SDK: feast.metrics sets
# PROMETHEUS_MULTIPROCESS_DIR and, if prometheus_client is not loaded yet, every metric
# of the test process then lives in files shared across registries (a counter of one
# test's registry would read another's increments). Loaded now, it stays in-process.
import prometheus_client.values  # noqa: F401
import pytest

from jobs.localstack import Stack
from jobs.localstack.triton_server import TritonService
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from tests.support.stacks import free_port, own_stack_settings

__all__ = ["free_port"]  # imported from here by many tests

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Endpoints:
    kafka_bootstrap: str
    redis_url: str


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    external = os.environ.get("STREAMREC_TEST_KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield Endpoints(external, os.environ.get("STREAMREC_TEST_REDIS_URL", ""))
        return
    settings = own_stack_settings(tmp_path_factory.mktemp("stack"))
    local = Stack(settings)
    local.up(["kafka", "redis"])
    try:
        yield Endpoints(settings.kafka_bootstrap, settings.redis_url)
    finally:
        local.down(["kafka", "redis"])


@pytest.fixture(scope="session")
def kafka(stack: Endpoints) -> KafkaSettings:
    return KafkaSettings(stack.kafka_bootstrap)


TopicFactory = Callable[..., str]


@pytest.fixture
def topic_factory(kafka: KafkaSettings, request: pytest.FixtureRequest) -> TopicFactory:
    """Creates a topic with a name unique to this test; returns the name.

    ``config`` is the topic's own configuration (e.g. ``runtime.kafka.LOG_APPEND_TIME``
    for a requests topic).
    """

    def create(
        partitions: int = 1, suffix: str = "", config: Mapping[str, str] | None = None
    ) -> str:
        stem = request.node.name.replace("[", "-").replace("]", "")[:60]
        name = f"t-{stem}-{uuid.uuid4().hex[:8]}{suffix}"
        ensure_topics(kafka, [TopicSpec(name, partitions, dict(config or {}))])
        return name

    return create


@pytest.fixture(scope="session")
def mlflow_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real MLflow tracking server (the stack's service) on a free port; its URI.

    Its venv is made once under the cache folder (minutes on a fresh clone), then reused.
    """
    settings = own_stack_settings(tmp_path_factory.mktemp("mlflow-stack"))
    stack = Stack(settings)
    stack.up(["mlflow"], timeout_s=120)
    try:
        yield stack.exports(["mlflow"])["MLFLOW_TRACKING_URI"]
    finally:
        stack.down(["mlflow"])


@dataclass(frozen=True)
class RedisClusterStack:
    """A real Redis Cluster of the stack manager (three masters, three replicas)."""

    stack: Stack
    url: str  # redis+cluster://, the form every role takes


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterStack]:
    """Shared by the tests that leave its shape as they found it; a test that fails a
    node over starts one of its own (``tests.support.stacks.own_stack_settings``)."""
    settings = own_stack_settings(tmp_path_factory.mktemp("redis-cluster"), redis_cluster=True)
    local = Stack(settings)
    local.up(["redis"])
    try:
        yield RedisClusterStack(local, settings.redis_url)
    finally:
        local.down(["redis"])


# --- Triton: the real tritonserver on free ports, serving a temporary model repository ---


@dataclass(frozen=True)
class TritonServer:
    """A running tritonserver (explicit model control) and the repository it serves.

    ``small_artifacts`` is the artifacts directory of the untrained model published
    as version 1 of every model at start; ``ranker_python`` and ``ranker_torch``
    (the python-backend models this binary can run) serve it.
    """

    grpc_url: str  # host:port, as tritonclient.grpc takes it
    http_url: str
    metrics_url: str
    repository: Path
    small_artifacts: Path
    log_path: Path
    model: str = "ranker_python"

    def publish(self, artifacts_dir: Path, serve: bool = True) -> int:
        """Publish ``artifacts_dir`` as the next version; with ``serve``, swap to it."""
        from inference.serving import control, repository

        version = repository.publish(artifacts_dir, self.repository)
        if serve:
            control.rollout(control.TritonControl(self.http_url), self.repository / self.model)
        return version


# The models the wheel's binary can serve (it has no ONNX Runtime backend for `ranker`).
PYTHON_MODELS = ("ranker_python", "ranker_torch")


@pytest.fixture(scope="session")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    """tritonserver from the nvidia-pytriton wheel, serving a small random ranker.

    Tests that change the served version should restore it (``publish`` a copy of
    ``small_artifacts`` or roll back), or use their own model via ``publish``.
    """
    from inference.serving import repository
    from tests.inference.serving.artifacts import write_serving_artifacts

    root = tmp_path_factory.mktemp("triton")
    artifacts = write_serving_artifacts(root / "small-artifacts")
    models = root / "models"
    repository.publish(artifacts, models)
    settings = own_stack_settings(
        root / "home", triton_model_repository=models, triton_models=PYTHON_MODELS
    )
    local = Stack(settings)
    local.up(["triton"])
    try:
        yield TritonServer(
            grpc_url=settings.triton_grpc_url,
            http_url=settings.triton_http_url,
            metrics_url=f"http://127.0.0.1:{settings.triton_metrics_port}/metrics",
            repository=models,
            small_artifacts=artifacts,
            log_path=TritonService(settings).log_path,
        )
    finally:
        local.down(["triton"])


# The only reason a test may skip: it needs a GPU, which CI never has. Any other
# skip fails the run (see tests/support/requirements.py for what to install).
ALLOWED_SKIP_REASON = "GPU"


def unexpected_skips(reports: list[pytest.TestReport]) -> list[str]:
    """``nodeid: reason`` of each skip whose reason is not the allowed one."""
    found = []
    for report in reports:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if ALLOWED_SKIP_REASON not in reason:
            found.append(f"{report.nodeid}: {reason}")
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    unexpected = unexpected_skips(reporter.stats.get("skipped", []))
    if unexpected:
        reporter.write_sep("=", "unexpected skips (only GPU checks may skip)", red=True)
        for line in unexpected:
            reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
