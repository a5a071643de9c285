"""The feature job submitted with `flink run` to the standalone cluster equals the local run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.features.flink_client import zip_packages
from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from jobs.localstack import Stack, StackSettings, flink_jobs
from jobs.replay.run import ReplayOptions, run_replay
from schemas.kafka import KafkaSettings
from tests.conftest import REPO_ROOT, TopicFactory, free_port
from tests.jobs.features.harness import JobTopics, changelog, run_bounded
from tests.jobs.features.test_job_integration import as_set, topics_for

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackSettings]:
    settings = StackSettings(
        home=tmp_path_factory.mktemp("cluster"),
        cache_dir=StackSettings.from_env(cwd=REPO_ROOT).cache_dir,
        kafka_port=free_port(), kafka_controller_port=free_port(), redis_port=free_port(),
        flink_rest_port=free_port(), flink_rpc_port=free_port(),
        flink_jobmanager_metrics_port=free_port(), flink_taskmanager_metrics_port=free_port(),
    )  # fmt: skip
    stack = Stack(settings)
    stack.up(["flink"], timeout_s=120)
    try:
        yield settings
    finally:
        stack.down(["flink"])


# 85 s on a loaded box: `make faults` runs it; the cluster path stays in make test through
# tests/jobs/localstack/test_flink_integration.py (a submitted SQL job).
@pytest.mark.long
def test_cluster_run_equals_local_run(
    cluster: StackSettings, kafka: KafkaSettings, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    local = topics_for(topic_factory, partitions=2)
    options = ReplayOptions(dataset="taobao-9days", topic=local.source, sort_by_time=True)
    assert run_replay(options, kafka).ok
    # Every window: which ones the changed mode leaves out depends on the watermark's pace.
    run_bounded(kafka, local, ["--window-mode", "every"])

    remote = JobTopics(local.source, local.source + "-cluster", local.source + "-cluster-dlq")
    jars = [kafka_connector_jar(cluster.cache_dir), functions_jar(cluster.cache_dir)]
    archive = zip_packages(REPO_ROOT, ["jobs", "schemas"], tmp_path / "job.zip")
    jar_flags = [flag for jar in jars for flag in ("--jar", str(jar))]
    args = [*remote.args(), "--bounded", "--detach", "--window-mode", "every",
            "--bootstrap-servers", kafka.bootstrap_servers, *jar_flags]  # fmt: skip
    job_id = flink_jobs.submit_python_job(cluster, "jobs.features", args, [archive])
    assert flink_jobs.wait_for_job(cluster, job_id, ["FINISHED"], timeout_s=300) == "FINISHED"

    ours, theirs = changelog(kafka, local.changelog), changelog(kafka, remote.changelog)
    assert set(ours) == set(theirs) == {"user_recent", "user_window", "item_window",
                                        "category_window"}  # fmt: skip
    for view in ours:
        assert len(ours[view]) == len(theirs[view]), view
        assert as_set(ours[view]) == as_set(theirs[view]), view
