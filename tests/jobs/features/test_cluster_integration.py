"""The feature job submitted with `flink run` to the standalone cluster equals the local run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.features.flink_client import zip_packages
from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.localstack import Stack, StackSettings, flink_jobs
from jobs.localstack.flink_cluster import rest_json
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import KafkaSettings
from tests.conftest import REPO_ROOT, TopicFactory, free_port
from tests.jobs.features.harness import JobTopics, changelog, run_bounded
from tests.jobs.features.test_job_integration import as_set, topics_for

pytestmark = pytest.mark.integration


# (TaskManagers, job parallelism): the single-slot run, and the job's operators split
# over two TaskManagers, each subtask on a slot of its own.
SHAPES = [(1, 1), (2, 2)]


@pytest.fixture(params=SHAPES, ids=[f"{tms}tm-p{p}" for tms, p in SHAPES])
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[StackSettings, int]]:
    taskmanagers, parallelism = request.param
    settings = StackSettings(
        home=tmp_path_factory.mktemp("cluster"),
        cache_dir=StackSettings.from_env(cwd=REPO_ROOT).cache_dir,
        kafka_port=free_port(), kafka_controller_port=free_port(), redis_port=free_port(),
        flink_rest_port=free_port(), flink_rpc_port=free_port(),
        flink_jobmanager_metrics_port=free_port(), flink_taskmanager_metrics_port=free_port(),
        flink_taskmanagers=taskmanagers,
    )  # fmt: skip
    stack = Stack(settings)
    stack.up(["flink"], timeout_s=120)
    try:
        yield settings, parallelism
    finally:
        stack.down(["flink"])


# 85 s on a loaded box: `make faults` runs it; the cluster path stays in make test through
# tests/jobs/localstack/test_flink_integration.py (a submitted SQL job).
@pytest.mark.long
def test_cluster_run_equals_local_run(
    cluster: tuple[StackSettings, int],
    kafka: KafkaSettings,
    topic_factory: TopicFactory,
    tmp_path: Path,
) -> None:
    settings, parallelism = cluster
    managers = rest_json(settings.flink_rest_url, "/taskmanagers")["taskmanagers"]
    assert len(managers) == settings.flink_taskmanagers
    local = topics_for(topic_factory, partitions=2)
    options = ReplayOptions(dataset="taobao-9days", topic=local.source, sort_by_time=True)
    assert run_replay(options, kafka).ok
    # Every window: which ones the changed mode leaves out depends on the watermark's pace.
    run_bounded(kafka, local, ["--window-mode", "every"])

    remote = JobTopics(local.source, local.source + "-cluster", local.source + "-cluster-dlq")
    jars = [kafka_connector_jar(settings.cache_dir), functions_jar(settings.cache_dir)]
    archive = zip_packages(REPO_ROOT, ["jobs", "schemas", "runtime"], tmp_path / "job.zip")
    jar_flags = [flag for jar in jars for flag in ("--jar", str(jar))]
    args = [*remote.args(), "--bounded", "--detach", "--window-mode", "every",
            "--bootstrap-servers", kafka.bootstrap_servers, "--parallelism", str(parallelism),
            *jar_flags]  # fmt: skip
    job_id = flink_jobs.submit_python_job(settings, "jobs.features", args, [archive])
    assert flink_jobs.wait_for_job(settings, job_id, ["FINISHED"], timeout_s=300) == "FINISHED"
    plan = rest_json(settings.flink_rest_url, f"/jobs/{job_id}")
    widest = max(plan["vertices"], key=lambda vertex: vertex["parallelism"])
    assert widest["parallelism"] == parallelism
    placed = rest_json(
        settings.flink_rest_url, f"/jobs/{job_id}/vertices/{widest['id']}/taskmanagers"
    )
    assert (
        len({tm["taskmanager-id"] for tm in placed["taskmanagers"]}) == settings.flink_taskmanagers
    )

    ours, theirs = changelog(kafka, local.changelog), changelog(kafka, remote.changelog)
    assert set(ours) == set(theirs) == {"user_recent", "user_window", "item_window",
                                        "category_window"}  # fmt: skip
    for view in ours:
        assert len(ours[view]) == len(theirs[view]), view
        assert as_set(ours[view]) == as_set(theirs[view]), view
