"""The local Prometheus for real: Debian's build scrapes a part and answers a dashboard query."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from jobs.localstack import process
from jobs.localstack.dashboard import PanelQuery, Prometheus, read_panels
from jobs.localstack.observe import wait_scraped
from jobs.localstack.prometheus_server import PrometheusService
from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import Stack
from runtime.metrics_server import serve_registry
from tests.conftest import free_port

pytestmark = pytest.mark.integration
INTERVAL_S = 0.5


def test_prometheus_scrapes_a_part_where_its_port_setting_puts_it(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    requests = Counter("streamrec_worker_requests", "Valid requests consumed.", registry=registry)
    server = serve_registry(registry, free_port())
    assert server is not None
    # The other parts off, the feature job's local run included (the stack's Flink stays).
    others = ("DRIFT", "CANARY", "OUTCOME", "FEATURE_WRITER", "FEATURES")
    others_off = {f"STREAMREC_{p}_METRICS_PORT": "0" for p in others}
    environ = {"STREAMREC_WORKER_METRICS_PORT": str(server.server_port), **others_off}
    settings = StackSettings.from_env(
        {"STREAMREC_PROMETHEUS_PORT": str(free_port()),
         "STREAMREC_PROMETHEUS_SCRAPE_INTERVAL_S": str(INTERVAL_S)},
        cwd=tmp_path,
    )  # fmt: skip
    stack = Stack(settings, [("prometheus", lambda s: PrometheusService(s, environ))])
    try:
        stack.up(["prometheus"], timeout_s=60)
        prometheus = Prometheus(stack.services["prometheus"].endpoint())
        # The worker, the stack's Triton and Flink (JobManager, TaskManager) and itself.
        health = wait_scraped(prometheus, 5)
        assert health[f"worker/127.0.0.1:{server.server_port}"] == "up", health
        assert {key.split("/")[0] for key in health} == {"worker", "triton", "flink", "prometheus"}
        started = time.time()
        for _ in range(12):
            requests.inc(5)
            time.sleep(INTERVAL_S)
        query = PanelQuery(
            "Request rate", "A", "sum(rate(streamrec_worker_requests_total[$__rate_interval]))", ""
        )
        [reading] = read_panels(prometheus, started, time.time(), INTERVAL_S, [query])
        # Five requests every half second: ten a second, read through a real rate().
        assert reading.has_data and 5 <= reading.peak <= 15, reading
    finally:
        stack.down()
        server.shutdown()
    pid = process.read_pidfile(stack.services["prometheus"].pidfile)
    assert pid is None
