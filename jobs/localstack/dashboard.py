"""The Grafana dashboard's queries, evaluated through a Prometheus' HTTP API.

What Grafana would draw, without Grafana: every target of every panel in
docker/grafana/dashboards/streamrec.json, with Grafana's range variables replaced
by fixed durations, run as a range query over a recent window. ``make observe
--panels`` prints the table; the live dashboard test judges it.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.prometheus_server import duration

REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = REPO_ROOT / "docker" / "grafana" / "dashboards" / "streamrec.json"


@dataclass(frozen=True)
class PanelQuery:
    panel: str
    ref: str
    expr: str
    legend: str


@dataclass(frozen=True)
class Series:
    labels: Mapping[str, str]
    # (unix seconds, value) in time order; NaN and infinities dropped.
    points: Sequence[tuple[float, float]]

    @property
    def last(self) -> float:
        return self.points[-1][1]

    @property
    def peak(self) -> float:
        return max(value for _, value in self.points)


@dataclass(frozen=True)
class PanelReading:
    query: PanelQuery
    series: Sequence[Series]

    @property
    def has_data(self) -> bool:
        return any(s.points for s in self.series)

    @property
    def peak(self) -> float:
        """The largest value any series reached (NaN without data)."""
        peaks = [s.peak for s in self.series if s.points]
        return max(peaks) if peaks else math.nan


class PrometheusError(RuntimeError):
    """Prometheus refused a query or could not be reached."""


def panel_queries(dashboard: Path = DASHBOARD) -> list[PanelQuery]:
    """Every query of every panel (rows have none), in the dashboard's order."""
    panels = json.loads(dashboard.read_text())["panels"]
    return [
        PanelQuery(panel["title"], target["refId"], target["expr"], target.get("legendFormat", ""))
        for panel in panels
        for target in panel.get("targets", [])
    ]


def instantiate(expr: str, rate_interval_s: float, range_s: float) -> str:
    """``expr`` with Grafana's variables as Grafana would fill them for this window.

    ``$__rate_interval`` is at least four scrape intervals (Grafana's own rule), so a rate
    always has two samples; ``$__range`` is the whole window shown.
    """
    values = {
        "$__rate_interval": duration(rate_interval_s),
        "$__range": duration(range_s),
        "$__interval": duration(rate_interval_s / 4),
    }
    for variable, value in values.items():
        expr = expr.replace(variable, value)
    return expr


class Prometheus:
    """The few calls of Prometheus' HTTP API that reading a dashboard needs."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str, params: Mapping[str, str]) -> dict[str, object]:
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=self.timeout_s) as r:
                body: dict[str, object] = json.loads(r.read())
        except urllib.error.HTTPError as error:  # a bad query answers 400 with a reason
            body = json.loads(error.read() or b"{}")
            raise PrometheusError(f"{params.get('query', path)}: {body.get('error')}") from error
        except (urllib.error.URLError, OSError) as error:
            raise PrometheusError(f"no Prometheus answers at {self.url}: {error}") from error
        if body.get("status") != "success":
            raise PrometheusError(f"{params.get('query', path)}: {body.get('error')}")
        return body

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        params["step"] = f"{step_s:g}"
        data = self._get("/api/v1/query_range", params)["data"]
        assert isinstance(data, dict)
        return [
            Series(
                item["metric"],
                [(float(t), v) for t, raw in item["values"] if math.isfinite(v := float(raw))],
            )
            for item in data["result"]
        ]

    def targets(self) -> dict[str, str]:
        """Each scrape target's health (``up``, ``down``, ``unknown``), keyed job/instance."""
        data = self._get("/api/v1/targets", {"state": "active"})["data"]
        assert isinstance(data, dict)
        return {
            f"{t['labels']['job']}/{t['labels']['instance']}": t["health"]
            for t in data["activeTargets"]
        }


def read_panels(
    prometheus: Prometheus,
    start: float,
    end: float,
    scrape_interval_s: float,
    queries: Sequence[PanelQuery] | None = None,
) -> list[PanelReading]:
    """Every panel query over ``start``..``end``, stepped at the scrape interval."""
    rate_interval = 4 * scrape_interval_s
    return [
        PanelReading(
            query,
            prometheus.query_range(
                instantiate(query.expr, rate_interval, end - start), start, end, scrape_interval_s
            ),
        )
        for query in (panel_queries() if queries is None else queries)
    ]


def format_readings(readings: Sequence[PanelReading]) -> str:
    """A table: panel, query, series, peak value (a dash where the query had no data)."""
    rows = [("PANEL", "QUERY", "SERIES", "PEAK")]
    for reading in readings:
        peak = f"{reading.peak:.4g}" if reading.has_data else "-"
        legend = reading.query.legend or reading.query.ref
        rows.append((reading.query.panel, legend, str(len(reading.series)), peak))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
