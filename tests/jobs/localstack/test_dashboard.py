"""Reading the dashboard's queries (pure parts; the live reading is tests/docker's live test)."""

from __future__ import annotations

import json
import math

from jobs.localstack.dashboard import (
    DASHBOARD,
    PanelQuery,
    PanelReading,
    Series,
    format_readings,
    instantiate,
    panel_queries,
)


def test_every_target_of_every_panel_is_read_in_order() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    expected = [t["expr"] for p in panels for t in p.get("targets", [])]
    assert [q.expr for q in panel_queries()] == expected and expected


def test_grafanas_variables_become_durations_prometheus_accepts() -> None:
    expr = "rate(x[$__rate_interval]) + increase(y[$__range]) + z[$__interval]"
    assert instantiate(expr, 8, 300) == ("rate(x[8000ms]) + increase(y[300000ms]) + z[2000ms]")


def test_the_table_shows_the_peak_and_a_dash_without_data() -> None:
    query = PanelQuery("Errors", "A", "sum(rate(e[1m]))", "{{component}}")
    seen = PanelReading(query, [Series({"component": "redis"}, [(1.0, 0.0), (2.0, 0.5)])])
    empty = PanelReading(PanelQuery("GPU", "A", "nv_gpu_utilization", ""), [])
    assert seen.has_data and seen.peak == 0.5
    assert not empty.has_data and math.isnan(empty.peak)
    lines = format_readings([seen, empty]).splitlines()
    assert lines[0].split() == ["PANEL", "QUERY", "SERIES", "PEAK"]
    assert lines[1].split() == ["Errors", "{{component}}", "1", "0.5"]
    assert lines[2].split() == ["GPU", "A", "0", "-"]
