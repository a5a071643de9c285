"""The Grafana dashboard and the Prometheus scrape config match what the processes export."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.docker.manifests import DOCKER, code_ports, compose
from tests.docker.metric_names import (
    FLINK_METRICS,
    TRITON_METRICS,
    exported_series,
    grouping_labels,
    queried_metrics,
)

DASHBOARD = DOCKER / "grafana" / "dashboards" / "streamrec.json"


def panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def test_dashboard_is_valid_json_with_unique_panel_ids() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["uid"] == "streamrec"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels():
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "prometheus"


def test_every_queried_metric_is_exported() -> None:
    ours = exported_series()
    allowed = set(ours) | TRITON_METRICS | FLINK_METRICS
    for panel in panels():
        for target in panel["targets"]:
            metrics = queried_metrics(target["expr"])
            assert metrics, (panel["title"], target["expr"])
            unknown = metrics - allowed
            assert not unknown, f"panel {panel['title']!r} queries unexported {unknown}"
            # Labels the query groups by must exist on our metrics it reads.
            for metric in metrics & set(ours):
                missing = grouping_labels(target["expr"]) - ours[metric]
                assert not missing, f"{panel['title']!r}: {metric} has no label {missing}"


def test_dashboard_covers_what_the_issue_asks() -> None:
    text = " ".join(t["expr"] for p in panels() for t in p["targets"])
    for metric in (
        "streamrec_worker_requests_total",
        "streamrec_worker_end_to_end_seconds_bucket",
        "streamrec_worker_stage_seconds_bucket",
        "streamrec_worker_errors_total",
        "streamrec_worker_dead_letters_total",
        "streamrec_worker_fallbacks_total",
        "streamrec_worker_feature_missing_total",
        "streamrec_drift_feature_score",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_gpu_utilization",
        "flink_taskmanager_job_task_operator_currentOutputWatermark",
        "streamrec_writer_rows_written_total",
        "streamrec_writer_stale_rows_total",
        "streamrec_writer_dead_letters_total",
        "streamrec_writer_redis_failures_total",
        "streamrec_writer_batch_write_seconds_bucket",
    ):
        assert metric in text, metric


def test_prometheus_scrapes_every_process_on_its_port() -> None:
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    targets = {
        job["job_name"]: {t for c in job["static_configs"] for t in c["targets"]}
        for job in config["scrape_configs"]
    }
    ports = code_ports()
    assert targets["worker"] == {f"worker:{ports['worker-metrics']}"}
    assert targets["drift"] == {f"drift:{ports['drift-metrics']}"}
    assert targets["outcome"] == {f"outcome:{ports['outcome-metrics']}"}
    assert targets["writer"] == {f"feature-writer:{ports['writer-metrics']}"}
    assert targets["triton"] == {f"triton:{ports['triton-metrics']}"}
    flink = yaml.safe_load((DOCKER / "flink" / "config.yaml").read_text())
    reporter = flink["metrics"]["reporter"]["prom"]
    assert reporter["factory"]["class"].endswith("PrometheusReporterFactory")
    assert targets["flink"] == {
        f"flink-jobmanager:{reporter['port']}",
        f"flink-taskmanager:{reporter['port']}",
    }
    services = set(compose()["services"])
    assert {t.split(":")[0] for ts in targets.values() for t in ts} <= services


def test_grafana_is_provisioned_with_the_datasource_and_dashboard() -> None:
    provisioning = DOCKER / "grafana" / "provisioning"
    datasource = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())
    assert datasource["datasources"][0]["uid"] == "prometheus"
    provider = yaml.safe_load((provisioning / "dashboards" / "streamrec.yaml").read_text())
    path = provider["providers"][0]["options"]["path"]
    grafana = compose()["services"]["grafana"]
    assert f"./grafana/dashboards:{path}:ro" in grafana["volumes"]


def exprs(panel: dict[str, Any]) -> str:
    return " ".join(t["expr"] for t in panel["targets"])


def test_latency_is_charted_from_the_kafka_append_and_as_a_cdf() -> None:
    e2e = "streamrec_worker_end_to_end_seconds_bucket"
    charted = [p for p in panels() if e2e in exprs(p)]
    assert any("Kafka append to recommendation" in p["title"] for p in charted)
    [cdf] = [p for p in charted if p["type"] == "bargauge"]
    [query] = cdf["targets"]
    assert query.get("instant") and "[$__range]" in query["expr"]
    assert "sum by (le) (increase(" in query["expr"] and "group_left" in query["expr"]
    text = " ".join(t["expr"] for p in panels() for t in p["targets"])
    for metric in (
        "streamrec_worker_request_event_lag_seconds_bucket",
        "streamrec_worker_idle_seconds_total",
        "streamrec_worker_latency_origin_total",
    ):
        assert metric in text, metric


def test_stages_are_work_and_their_means_stack() -> None:
    stage_panels = [p for p in panels() if "streamrec_worker_stage_seconds" in exprs(p)]
    assert all("idle" not in exprs(p) for p in stage_panels)
    [means] = [p for p in stage_panels if "streamrec_worker_stage_seconds_sum" in exprs(p)]
    assert "sum by (stage)" in exprs(means) and "streamrec_worker_stage_seconds_count" in exprs(
        means
    )
    assert means["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"


def test_batch_size_is_a_mean_and_units_do_not_mix() -> None:
    for panel in panels():
        text = exprs(panel)
        # A quantile of batches of one lies in the lowest bucket and reads below 1.
        assert not ("histogram_quantile" in text and "batch_size" in text), panel["title"]
        unit = panel["fieldConfig"]["defaults"].get("unit")
        if "nv_inference_request_failure" in text:
            assert unit == "reqps", panel["title"]
        if "nv_gpu_" in text:
            assert "without a GPU" in panel["description"], panel["title"]
    text = " ".join(exprs(p) for p in panels())
    assert "sum(rate(streamrec_worker_batch_size_sum" in text
