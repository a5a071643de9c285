"""Every labelled counter with known label values exists at 0 from start.

A series that first appears already at 1 reads as no increase to ``rate()``: the
first incident of its kind would not show. The expected values are written out
here (what the dashboard and alerts rely on); the source scans check that the code
labels nothing outside them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from inference.worker import metrics as worker_metrics
from inference.worker.deadline import DEADLINE_EXCEEDED
from inference.worker.freshness import TRIGGER_MISSING
from inference.worker.metrics import STAGES, WorkerMetrics
from inference.worker.prepare import NO_CANDIDATES, REDIS_DOWN
from inference.worker.rank import BAD_OUTPUT, TRITON_DOWN, TRITON_TIMEOUT
from jobs.drift.metrics import DriftMetrics
from jobs.outcomes.metrics import OutcomeMetrics
from schemas.errors import InvalidRecord
from tests.inference.worker.test_prepare_covisit import MemoryReader, preparer, request

WORKER_DIR = Path(worker_metrics.__file__).parent
VIEWS = {"user_recent_clicks", "user_click_window", "category_trends", "item_trends"}
# metric (as exposed) -> label -> the values that must be there before anything happens.
WORKER_KNOWN: dict[str, dict[str, set[str]]] = {
    "streamrec_worker_errors_total": {"component": {"kafka", "redis", "triton", "ranker_output"}},
    "streamrec_worker_dead_letters_total": {
        "kind": {"malformed", "schema", "oversized", "timestamp"}
    },
    "streamrec_worker_fallbacks_total": {
        "reason": {
            "triton_unavailable",
            "triton_timeout",
            "ranker_bad_output",
            "redis_unavailable",
            "no_candidates",
            "deadline_exceeded",
            "features_behind_trigger",
        }
    },
    "streamrec_worker_recommendations_total": {"degraded": {"true", "false"}},
    "streamrec_worker_variant_answers_total": {
        "variant": {"default"},
        "outcome": {"ok", "model_error", "degraded", "rerouted"},
    },
    "streamrec_worker_feature_lookups_total": {"view": VIEWS | {"covisit"}},
    "streamrec_worker_feature_missing_total": {"view": VIEWS | {"covisit"}},
    "streamrec_worker_unreadable_rows_total": {"view": VIEWS},
    "streamrec_worker_shared_row_hits_total": {"view": {"category_trends", "item_trends"}},
    "streamrec_worker_fresh_waits_total": {"outcome": {"caught_up", "fruitless", "skipped"}},
    "streamrec_worker_trigger_features_total": {"outcome": {"store", "folded", "missing"}},
    "streamrec_worker_latency_origin_total": {
        "origin": {"log_append_time", "create_time", "poll_time"}
    },
    "streamrec_worker_stage_seconds_count": {
        "stage": {
            "poll",
            "decode",
            "features",
            "recall",
            "rank",
            "postprocess",
            "produce",
            "commit",
        },
    },
    "streamrec_worker_variant_seconds_count": {"variant": {"default"}},
}


def exposed(text: str) -> dict[str, list[dict[str, str]]]:
    """Sample name -> the label sets it is exposed with."""
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(dict(sample.labels))
    return out


def missing_values(text: str, known: dict[str, dict[str, set[str]]]) -> dict[str, set[str]]:
    samples = exposed(text)
    missing: dict[str, set[str]] = {}
    for name, labels in known.items():
        for label, values in labels.items():
            there = {s[label] for s in samples.get(name, []) if label in s}
            if values - there:
                missing[f"{name}{{{label}}}"] = values - there
    return missing


def test_a_fresh_worker_exposes_every_known_label_value_at_zero() -> None:
    text = generate_latest(WorkerMetrics().registry).decode()
    assert missing_values(text, WORKER_KNOWN) == {}
    # Both variant labels together: the default variant with each outcome.
    answers = exposed(text)["streamrec_worker_variant_answers_total"]
    assert {(s["variant"], s["outcome"]) for s in answers} >= {
        ("default", o) for o in ("ok", "model_error", "degraded", "rerouted")
    }


def test_dependency_gauges_are_not_invented() -> None:
    # 0 would say "down" before any call was made; the gauge appears with the first call.
    text = generate_latest(WorkerMetrics().registry).decode()
    assert "streamrec_worker_dependency_up{" not in text
    assert "streamrec_worker_routing_share{" not in text


def test_the_reasons_the_code_gives_are_known() -> None:
    reasons = {REDIS_DOWN, NO_CANDIDATES, TRIGGER_MISSING, TRITON_DOWN, TRITON_TIMEOUT,
               BAD_OUTPUT, DEADLINE_EXCEEDED}  # fmt: skip
    assert reasons <= set(worker_metrics.FALLBACK_REASONS)


def test_the_dead_letter_kinds_are_every_contract_errors() -> None:
    kinds = {error.kind for error in InvalidRecord.__subclasses__()}
    assert kinds == WORKER_KNOWN["streamrec_worker_dead_letters_total"]["kind"]


def _literal_labels(call: str) -> set[str]:
    """String literals the worker's code passes to ``<call>(...)``'s first argument."""
    pattern = re.compile(re.escape(call) + r'\(\s*"([a-z_]+)"')
    return {m for path in WORKER_DIR.glob("*.py") for m in pattern.findall(path.read_text())}


def test_the_label_values_in_the_code_are_known() -> None:
    components = _literal_labels("errors.labels")
    assert components <= set(worker_metrics.ERROR_COMPONENTS), components
    assert components >= {"redis", "ranker_output", "kafka"}
    lookups = _literal_labels("_count_lookups")
    assert lookups and lookups <= set(worker_metrics.LOOKUP_VIEWS)
    shared = _literal_labels("_count_shared")
    assert shared and shared <= set(worker_metrics.SHARED_VIEWS)
    waits = _literal_labels("fresh_waits.labels")
    assert waits and waits <= set(worker_metrics.FRESH_WAIT_OUTCOMES)


@pytest.mark.parametrize("redis_fails", [False, True])
def test_a_prepared_batch_times_its_two_stages_and_labels_only_known_values(
    tmp_path: Path, redis_fails: bool
) -> None:
    prep = preparer(tmp_path, MemoryReader(fail_neighbours=redis_fails))
    batch = prep.prepare([request()])
    assert set(batch.stage_seconds) == {"features", "recall"} <= set(STAGES)
    samples = exposed(generate_latest(prep.metrics.registry).decode())
    for name, labels in WORKER_KNOWN.items():
        for label, values in labels.items():
            seen = {s[label] for s in samples.get(name, []) if label in s}
            assert seen <= values, (name, seen - values)


DRIFT_KNOWN = {
    "streamrec_drift_checks_total": {"status": {"ok", "drift", "insufficient_data"}},
    "streamrec_drift_records_total": {"source": {"features", "recommendations"}},
}


def test_a_fresh_drift_job_exposes_its_statuses_sources_and_dead_letters() -> None:
    text = generate_latest(DriftMetrics().registry).decode()
    assert missing_values(text, DRIFT_KNOWN) == {}
    assert "streamrec_drift_dead_letters_total" in exposed(text)


def test_a_fresh_outcome_job_exposes_the_default_variant_behaviours_and_topics() -> None:
    metrics = OutcomeMetrics(topics=("recs-topic", "events-topic"))
    text = generate_latest(metrics.registry).decode()
    known = {
        "streamrec_outcome_judged_total": {"variant": {"default"}, "registry_version": {""}},
        "streamrec_outcome_hits_total": {"behavior": {"pv", "cart", "fav", "buy"}},
        "streamrec_outcome_skipped_total": {"topic": {"recs-topic", "events-topic"}},
    }
    assert missing_values(text, known) == {}
