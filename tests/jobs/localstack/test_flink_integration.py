"""The real Flink cluster (and Kafka) in a temporary home on free ports, with one job on it."""

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from jobs.features.maven import kafka_connector_jar
from jobs.localstack import Stack, StackSettings
from jobs.localstack import flink_jobs as fj
from jobs.localstack.flink_cluster import rest_json
from tests.jobs.features.test_metrics_integration import scrape
from tests.jobs.localstack.test_integration import _free_ports, _processes_mentioning
from tests.security.listeners import descendants, exposed, listeners_of

pytestmark = pytest.mark.integration

SMOKE_JOB = Path(__file__).with_name("flink_smoke_job.py")
ROWS = 100


@pytest.fixture
def flink_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    kafka, controller, redis, rest, rpc, jm_metrics, tm_metrics = _free_ports(7)
    settings = StackSettings(
        home=tmp_path_factory.mktemp("flinkstack"),
        cache_dir=StackSettings.from_env().cache_dir,
        kafka_port=kafka,
        kafka_controller_port=controller,
        redis_port=redis,
        flink_rest_port=rest,
        flink_rpc_port=rpc,
        flink_jobmanager_metrics_port=jm_metrics,
        flink_taskmanager_metrics_port=tm_metrics,
    )
    stack = Stack(settings)
    try:
        yield stack
    finally:
        stack.down()


def _read_topic(bootstrap: str, topic: str, expected: int, timeout_s: float = 30) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "flink-smoke", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout_s
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and (value := message.value()):
                values.append(value)
        return values
    finally:
        consumer.close()


def test_cluster_runs_a_submitted_sql_job_and_down_leaves_nothing(flink_stack: Stack) -> None:
    settings = flink_stack.settings
    jar = kafka_connector_jar(settings.cache_dir)  # before the clock matters: a first run downloads
    flink_stack.up(["kafka", "flink"], timeout_s=90)
    statuses = {s.name: s for s in flink_stack.status(["kafka", "flink"])}
    assert all(s.healthy for s in statuses.values()), statuses
    assert statuses["flink-jobmanager"].endpoint == settings.flink_rest_url
    overview = rest_json(settings.flink_rest_url, "/overview")
    assert (overview["taskmanagers"], overview["slots-total"]) == (1, 2)

    topic = f"flink-smoke-{uuid.uuid4().hex[:8]}"
    args = ["--topic", topic, "--bootstrap", settings.kafka_bootstrap, "--rows", str(ROWS)]
    job_id = fj.submit_python_job(
        settings, "flink_smoke_job", [*args, "--jar", str(jar)], [SMOKE_JOB]
    )
    assert fj.wait_for_job(settings, job_id, ["FINISHED"], timeout_s=60) == "FINISHED"
    assert fj.JobSummary(job_id, f"localstack-smoke-{topic}", "FINISHED") in fj.list_jobs(settings)
    values = _read_topic(settings.kafka_bootstrap, topic, ROWS)
    assert sorted(values) == sorted(
        f'{{"n":{n},"doubled":{2 * n}}}'.encode() for n in range(1, 101)
    )

    assert_metrics_served_on_loopback(flink_stack)

    flink_stack.down()
    # No JVM (nor a script that would exec one) survives, for any service of this home.
    assert _processes_mentioning(str(settings.home)) == []


def assert_metrics_served_on_loopback(stack: Stack) -> None:
    """Each process's Prometheus endpoint answers with Flink's metrics; nothing else is open."""
    settings = stack.settings
    statuses = {s.name: s for s in stack.status(["flink"])}
    jobmanager = scrape(settings.flink_jobmanager_metrics_port)
    assert [v for _, v in jobmanager["flink_jobmanager_numRegisteredTaskManagers"]] == [1.0]
    assert [v for _, v in jobmanager["flink_jobmanager_taskSlotsTotal"]] == [2.0]
    assert [v for _, v in jobmanager["flink_jobmanager_numRunningJobs"]] == [0.0]  # it finished
    taskmanager = scrape(settings.flink_taskmanager_metrics_port)
    assert taskmanager["flink_taskmanager_Status_JVM_Memory_Heap_Used"][0][1] > 0
    assert statuses["flink-jobmanager"].metrics == (
        f"http://127.0.0.1:{settings.flink_jobmanager_metrics_port}/metrics"
    )
    pids = [s.pid for s in statuses.values() if s.pid is not None]
    listening = listeners_of(descendants(pids))
    ports = {item.port for items in listening.values() for item in items}
    assert {
        settings.flink_jobmanager_metrics_port,
        settings.flink_taskmanager_metrics_port,
    } <= ports
    assert exposed(listening) == []
