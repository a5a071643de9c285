"""docker/prometheus/rules: promtool accepts the rules and their unit tests pass.

promtool (Prometheus's own checker) runs the rules on the synthetic series of
``*_test.yml``; jobs/localstack/prometheus_binaries.py finds it or fetches Debian's build.
The metric names and labels the rules and their test series use are checked
against the worker's and the drift job's registries, as the dashboard's are
(tests/docker/test_observability.py).
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from jobs.localstack.prometheus_binaries import ensure_program
from tests.docker.manifests import DOCKER
from tests.docker.metric_names import exported_series, grouping_labels, queried_metrics

RULES = DOCKER / "prometheus" / "rules"
OPERATIONS = DOCKER.parent / "docs" / "operations.md"
RULE_FILES = sorted(RULES.glob("*.rules.yml"))
TEST_FILES = sorted(RULES.glob("*_test.yml"))
PROMTOOL_TIMEOUT_S = 300
# Series the rules may read that no process exports yet (none: keep it that way).
PLANNED_SERIES: dict[str, frozenset[str]] = {}
# Labels a scrape adds to every series.
TARGET_LABELS = frozenset({"job", "instance"})
SEVERITIES = {"page", "ticket"}
_RECORDED = re.compile(r"\bstreamrec:[A-Za-z0-9_:]+")
_SELECTOR = re.compile(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


@pytest.fixture(scope="module")
def promtool() -> str:
    return ensure_program("promtool")


def run_promtool(promtool: str, *args: str) -> str:
    result = subprocess.run(
        [promtool, *args],
        cwd=RULES,
        capture_output=True,
        text=True,
        timeout=PROMTOOL_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def rules() -> list[dict[str, Any]]:
    return [
        rule
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
        for rule in group["rules"]
    ]


def alert_tests() -> list[dict[str, Any]]:
    return [
        case
        for path in TEST_FILES
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]
        for case in test.get("alert_rule_test", [])
    ]


def known_series() -> dict[str, frozenset[str]]:
    return {**exported_series(), **PLANNED_SERIES}


def test_there_are_rules_and_tests() -> None:
    assert [p.name for p in RULE_FILES] == ["slo.rules.yml"]
    assert [p.name for p in TEST_FILES] == ["slo_test.yml"]
    for path in TEST_FILES:
        listed = yaml.safe_load(path.read_text(encoding="utf-8"))["rule_files"]
        assert sorted(listed) == [p.name for p in RULE_FILES], path.name


def test_promtool_checks_the_rules(promtool: str) -> None:
    output = run_promtool(promtool, "check", "rules", *(p.name for p in RULE_FILES))
    assert "SUCCESS" in output, output


def test_promtool_unit_tests_pass(promtool: str) -> None:
    output = run_promtool(promtool, "test", "rules", *(p.name for p in TEST_FILES))
    assert "SUCCESS" in output and "FAILED" not in output, output


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    firing: set[str] = set()
    silent: set[str] = set()
    for case in alert_tests():
        (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    assert alerts - firing == set(), "alerts never tested firing"
    assert alerts - silent == set(), "alerts never tested silent"
    assert (firing | silent) <= alerts, "tests of alerts that do not exist"


def test_every_alert_routes_and_explains() -> None:
    for rule in rules():
        if "alert" not in rule:
            continue
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["labels"].get("slo"), f"{rule['alert']}: an slo label (inhibition)"
        assert {"summary", "description", "runbook_url"} <= set(rule["annotations"]), rule["alert"]


def test_every_alert_links_its_runbook_entry() -> None:
    headings = {
        "docs/operations.md#" + line.removeprefix("### ").strip().lower()
        for line in OPERATIONS.read_text(encoding="utf-8").splitlines()
        if line.startswith("### ")
    }
    for rule in rules():
        if "alert" in rule:
            url = rule["annotations"].get("runbook_url")
            assert url == f"docs/operations.md#{rule['alert'].lower()}", rule["alert"]
            assert url in headings, f"{rule['alert']}: no runbook entry in docs/operations.md"


def test_the_slo_thresholds() -> None:
    by_name = {rule.get("alert") or rule["record"]: rule["expr"] for rule in rules()}
    flat = {name: " ".join(expr.split()) for name, expr in by_name.items()}
    objective = "0.001"  # 99.9% good: an error budget of 0.1%
    assert flat["StreamrecErrorBudgetFastBurn"] == (
        f"streamrec:worker_request_errors:ratio_rate1h > (14.4 * {objective}) and "
        f"streamrec:worker_request_errors:ratio_rate5m > (14.4 * {objective})"
    )
    assert flat["StreamrecErrorBudgetSlowBurn"] == (
        f"streamrec:worker_request_errors:ratio_rate6h > (6 * {objective}) and "
        f"streamrec:worker_request_errors:ratio_rate30m > (6 * {objective})"
    )
    assert flat["StreamrecLatencyP99AboveSLO"].endswith("p99_rate5m > 0.05")
    assert "histogram_quantile(0.99," in flat["streamrec:worker_end_to_end_seconds:p99_rate5m"]


def test_every_metric_and_label_the_rules_read_is_exported() -> None:
    known = known_series()
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    for rule in rules():
        name = rule.get("alert") or rule["record"]
        expr = rule["expr"]
        metrics = queried_metrics(expr)
        unknown = metrics - set(known)
        assert not unknown, f"{name} reads unexported {unknown}"
        assert set(_RECORDED.findall(expr)) <= recorded, f"{name} reads an unrecorded rule"
        assert metrics or _RECORDED.search(expr), f"{name} reads no metric"
        labels = set().union(*(known[m] for m in metrics)) if metrics else set()
        missing = grouping_labels(expr) - labels
        assert not missing, f"{name} groups by labels its metrics lack: {missing}"
        for metric, matchers in _SELECTOR.findall(expr):
            if metric in known:
                absent = set(_MATCHER.findall(matchers)) - known[metric]
                assert not absent, f"{name}: {metric} has no label {absent}"
        # Metric names the annotations point people to must exist too.
        for text in rule.get("annotations", {}).values():
            assert queried_metrics(text) <= set(known), f"{name}: {text}"


def test_the_test_series_are_series_the_processes_export() -> None:
    known = known_series()
    for path in TEST_FILES:
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for series in test["input_series"]:
                match = _SELECTOR.fullmatch(series["series"])
                assert match, series["series"]
                metric, matchers = match.groups()
                assert metric in known, f"{path.name}: {metric} is not exported"
                labels = set(_MATCHER.findall(matchers)) - TARGET_LABELS
                assert labels <= known[metric], f"{path.name}: {series['series']}"
