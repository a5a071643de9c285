"""``python -m jobs.localstack observe`` (``make observe``): Prometheus beside the running stack.

Starts the local Prometheus (jobs/localstack/prometheus_server.py) if it is not up,
waits for its first scrapes, and prints where to look: the API, each target's
health, and how to point Grafana at it. With ``--panels`` it also prints every
dashboard query's reading over the last minutes (jobs/localstack/dashboard.py).
"""

from __future__ import annotations

import time

from jobs.localstack.dashboard import DASHBOARD, Prometheus, format_readings, read_panels
from jobs.localstack.prometheus_server import PrometheusService
from jobs.localstack.stack import Stack

PROMETHEUS = "prometheus"


def wait_scraped(prometheus: Prometheus, expected: int, timeout_s: float = 20.0) -> dict[str, str]:
    """Each target's health once every one has been scraped (or what is known at the timeout).

    Prometheus applies a new set of targets after its discovery's own delay (about 5 s),
    then scrapes each within one interval.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        health = prometheus.targets()
        known = [state for state in health.values() if state != "unknown"]
        if len(known) >= expected or time.monotonic() > deadline:
            return health
        time.sleep(0.5)


def observe(stack: Stack, panels_minutes: float = 0.0, timeout_s: float = 60.0) -> str:
    """Start Prometheus, wait for a round of scrapes, and return what to print."""
    stack.up([PROMETHEUS], timeout_s=timeout_s)
    interval = stack.settings.prometheus_scrape_interval_s
    url = stack.services[PROMETHEUS].endpoint()
    prometheus = Prometheus(url)
    service = stack.services[PROMETHEUS]
    assert isinstance(service, PrometheusService)
    health = wait_scraped(prometheus, sum(map(len, service.targets().values())))
    width = max(map(len, health), default=0)
    lines = [
        f"Prometheus: {url} (scraping every {interval:g} s; its config: "
        f"{stack.settings.home / PROMETHEUS / 'prometheus.yml'})",
        "",
        "targets (a part that is not running shows as down):",
        *(f"  {target:<{width}}  {state}" for target, state in sorted(health.items())),
        "",
        f"Grafana: add a Prometheus data source at {url} and import {DASHBOARD}.",
        f"Query it directly: curl '{url}/api/v1/query?query=up'",
        "Stop it with: python -m jobs.localstack down --services prometheus",
    ]
    if panels_minutes > 0:
        end = time.time()
        readings = read_panels(prometheus, end - panels_minutes * 60, end, interval)
        lines += ["", f"dashboard over the last {panels_minutes:g} min:", format_readings(readings)]
    return "\n".join(lines)
