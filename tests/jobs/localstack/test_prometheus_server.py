"""The local Prometheus' configuration: targets from the parts' ports, durations it accepts."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.localstack.prometheus_server import (
    PrometheusService,
    duration,
    part_targets,
    render_config,
    stack_targets,
)
from jobs.localstack.settings import StackSettings
from schemas.metrics_ports import METRICS_PORTS


def test_every_part_is_scraped_at_its_default_port_unless_moved_or_off() -> None:
    assert part_targets({}) == {job: [f"127.0.0.1:{port}"] for job, port in METRICS_PORTS.items()}
    moved = part_targets({"STREAMREC_WORKER_METRICS_PORT": "19108",
                          "STREAMREC_OUTCOME_METRICS_PORT": "0"})  # fmt: skip
    assert moved["worker"] == ["127.0.0.1:19108"] and "outcome" not in moved
    writer = part_targets({"STREAMREC_FEATURE_WRITER_METRICS_PORT": "19112"})["writer"]
    assert writer == ["127.0.0.1:19112"]


def test_durations_are_whole_units() -> None:
    # Prometheus 2.42 refuses "1.6s" in its configuration and in PromQL.
    assert duration(1.6) == "1600ms" and duration(2) == "2000ms" and duration(0.1) == "100ms"


def test_the_config_names_the_jobs_the_dashboard_and_rules_query(tmp_path: Path) -> None:
    rules = [tmp_path / "slo.rules.yml"]
    config = json.loads(render_config({"worker": ["127.0.0.1:9108"]}, 2.0, rules))
    assert config["global"] == {
        "scrape_interval": "2000ms", "evaluation_interval": "2000ms", "scrape_timeout": "1600ms",
    }  # fmt: skip
    assert config["rule_files"] == [str(rules[0])]
    assert config["scrape_configs"] == [
        {"job_name": "worker", "static_configs": [{"targets": ["127.0.0.1:9108"]}]}
    ]


def test_the_service_scrapes_the_parts_triton_and_itself_on_loopback(tmp_path: Path) -> None:
    settings = StackSettings.from_env({"STREAMREC_PROMETHEUS_PORT": "19090"}, cwd=tmp_path)
    service = PrometheusService(settings, environ={})
    targets = service.targets()
    assert targets["triton"] == ["127.0.0.1:8002"]
    assert targets["prometheus"] == ["127.0.0.1:19090"]
    assert set(METRICS_PORTS) <= set(targets)
    assert all(t.startswith("127.0.0.1:") for ts in targets.values() for t in ts)
    assert service.ports() == (19090,) and service.metrics_url().endswith(":19090/metrics")


def test_flink_is_scraped_on_the_clusters_ports_and_the_local_runs(tmp_path: Path) -> None:
    env = {"STREAMREC_FLINK_TASKMANAGER_METRICS_PORT": "19250"}
    settings = StackSettings.from_env(env, cwd=tmp_path)
    flink = ["127.0.0.1:9249", "127.0.0.1:19250"]
    assert stack_targets(settings, {})["flink"] == [*flink, "127.0.0.1:9251"]
    moved = {"STREAMREC_FEATURES_METRICS_PORT": "19251"}
    assert stack_targets(settings, moved)["flink"] == [*flink, "127.0.0.1:19251"]
    off = {"STREAMREC_FEATURES_METRICS_PORT": "0"}
    assert stack_targets(settings, off)["flink"] == flink
