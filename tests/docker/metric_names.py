"""Metric names the code exports, and the names the dashboard queries.

Exported names come from the processes' own prometheus_client registries
(series names as Prometheus stores them: ``_total`` for counters,
``_bucket``/``_sum``/``_count`` for histograms). Triton and Flink are not our
code: their names are an explicit allow-list taken from their documentation
(Triton's metrics page; Flink's system metrics as its Prometheus reporter
names them, ``flink_<scope>_<metric>``). The Flink names are also checked against
a live scrape of the feature job (tests/jobs/features/test_metrics_integration.py).
"""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import CollectorRegistry

TRITON_METRICS = frozenset(
    {
        "nv_inference_request_success",
        "nv_inference_request_failure",
        "nv_inference_count",
        "nv_inference_exec_count",
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_input_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_inference_compute_output_duration_us",
        "nv_gpu_utilization",
        "nv_gpu_memory_total_bytes",
        "nv_gpu_memory_used_bytes",
        "nv_gpu_power_usage",
    }
)
FLINK_METRICS = frozenset(
    {
        "flink_jobmanager_numRunningJobs",
        "flink_jobmanager_numRegisteredTaskManagers",
        "flink_taskmanager_job_task_numRecordsInPerSecond",
        "flink_taskmanager_job_task_numRecordsOutPerSecond",
        # Per operator: the source's count each event once, a sum over tasks does not.
        "flink_taskmanager_job_task_operator_numRecordsInPerSecond",
        "flink_taskmanager_job_task_operator_numRecordsOutPerSecond",
        "flink_taskmanager_job_task_operator_currentOutputWatermark",
        "flink_taskmanager_job_task_operator_watermarkLag",
        "flink_taskmanager_job_task_operator_pendingRecords",
        "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
    }
)
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created", ""),
    "gauge": ("",),
}
_METRIC = re.compile(r"\b((?:streamrec|nv|flink)_[A-Za-z0-9_]+)\b")


def registry_series(registry: CollectorRegistry) -> dict[str, frozenset[str]]:
    """Series name -> the labels it carries, for every metric in ``registry``."""
    series: dict[str, frozenset[str]] = {}
    for family in registry.collect():
        labels = _family_labels(registry, family.name)
        for suffix in _SUFFIXES.get(family.type, ("",)):
            extra = {"le"} if suffix == "_bucket" else set()
            series[family.name + suffix] = frozenset(labels | extra)
    return series


def _family_labels(registry: CollectorRegistry, name: str) -> set[str]:
    collectors: dict[str, Any] = registry._names_to_collectors
    for key in (name, name + "_total"):
        collector = collectors.get(key)
        if collector is not None:
            return set(getattr(collector, "_labelnames", ()))
    return set()


def exported_series() -> dict[str, frozenset[str]]:
    """Our processes' series (worker, drift job, canary, outcome job, feature writer), with
    their labels."""
    from inference.serving.canary_metrics import CanaryMetrics
    from inference.worker.metrics import WorkerMetrics
    from jobs.drift.metrics import DriftMetrics
    from jobs.feature_writer.metrics import WriterMetrics
    from jobs.outcomes.metrics import OutcomeMetrics

    series = registry_series(WorkerMetrics().registry)
    series.update(registry_series(DriftMetrics().registry))
    series.update(registry_series(CanaryMetrics().registry))
    series.update(registry_series(OutcomeMetrics().registry))
    series.update(registry_series(WriterMetrics().registry))
    return series


def queried_metrics(expr: str) -> set[str]:
    # Label values are quoted strings, not metrics: drop them first.
    return set(_METRIC.findall(re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)))


def grouping_labels(expr: str) -> set[str]:
    """Labels named in ``by (...)`` clauses."""
    return {
        label.strip()
        for group in re.findall(r"\bby \(([^)]*)\)", expr)
        for label in group.split(",")
        if label.strip()
    }
