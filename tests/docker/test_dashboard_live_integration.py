"""Every dashboard panel, read live through a real Prometheus scraping a running pipeline.

tests/docker/live_pipeline.py runs the slice (feature job, writer, worker, drift
watch, outcome join, Triton) with the demo's 2017 traffic, a burst of malformed
requests and a pause of Triton. Then every query of docker/grafana's dashboard is
evaluated over the run through Prometheus' HTTP API, as Grafana would, and:

- a panel that should have data has some (the exceptions say why they are empty here);
- each incident shows as a non-zero rate within one scrape interval of its first
  occurrence (counters exist at 0 from start-up, so a first event is a rise, not a
  series that appears already at its count);
- the latency panels read inside the range this test measured itself from the
  records' Kafka timestamps, not years (the payloads carry 2017 times).
"""

from __future__ import annotations

import math
import subprocess
import sys
from bisect import bisect_left
from collections.abc import Iterator, Sequence

import pytest

from inference.worker.metrics import LATENCY_BUCKETS
from jobs.localstack.dashboard import PanelReading, format_readings, read_panels
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from schemas.codec import recommendation_codec, request_codec
from schemas.errors import InvalidRecord
from tests.conftest import REPO_ROOT, Endpoints
from tests.docker.live_pipeline import SCRAPE_S, LiveRun, live_run
from tests.inference.worker.world import build_world, stream_events

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

# Panels (title, legend) that stay empty on this machine, and why.
EMPTY_HERE = {
    ("GPU utilisation and memory", "utilisation {{gpu_uuid}}"): "no GPU",
    ("GPU utilisation and memory", "memory {{gpu_uuid}}"): "no GPU",
    ("Share of users per variant", "{{variant}} v{{version}} {{registry_version}}"):
        "no traffic split is in force (the canary tests cover it)",
}  # fmt: skip
# The worker answers a timed-out or unreachable Triton with a fallback of either reason.
TRITON_FALLBACKS = ("triton_timeout", "triton_unavailable")
# What the worker needs to see an incident before counting it: a poll and a batch, or
# Triton's timeout (300 ms) and the batch it ends.
PROCESSING_S = 1.0
# An answer's delivery acknowledged after the broker appended it.
DELIVERY_S = 0.05


@pytest.fixture(scope="module")
def run(stack: Endpoints, kafka: KafkaSettings, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[LiveRun]:  # fmt: skip
    home = tmp_path_factory.mktemp("live")
    model_dir = home / "model"
    build_world(model_dir, stream_events(20_000))
    subprocess.run([sys.executable, "-m", "jobs.drift", "reference", "--max-rows", "5000",
                    "--out", str(model_dir / "drift_reference.parquet")],
                   cwd=REPO_ROOT, check=True, capture_output=True)  # fmt: skip
    with live_run(kafka, stack.redis_url, model_dir, home) as live:
        yield live


@pytest.fixture(scope="module")
def readings(run: LiveRun) -> list[PanelReading]:
    found = read_panels(run.prometheus, run.started - 5 * SCRAPE_S, run.ended, SCRAPE_S)
    print("\n" + format_readings(found))  # the table docker/README.md quotes
    return found


def test_every_panel_that_should_have_data_has_some(readings: list[PanelReading]) -> None:
    empty = {(r.query.panel, r.query.legend) for r in readings if not r.has_data}
    assert empty == set(EMPTY_HERE), format_readings(readings)


def first_rise(run: LiveRun, expr: str, since: float) -> float:
    """When ``expr`` (a rate) first read above 0 after ``since``, evaluated every 0.1 s."""
    series = run.prometheus.query_range(expr, since, run.ended, 0.1)
    times = [t for s in series for t, value in s.points if value > 0]
    assert times, f"{expr} never rose after the incident"
    return min(times)


def rate(metric: str, selector: str) -> str:
    window = f"{round(4 * SCRAPE_S * 1000)}ms"
    return f"sum(rate({metric}{{{selector}}}[{window}]))"


def test_the_first_malformed_request_shows_within_one_scrape(run: LiveRun) -> None:
    at = run.incidents.malformed_at
    expr = rate("streamrec_worker_dead_letters_total", 'kind="malformed"')
    delay = first_rise(run, expr, at) - at
    print(f"\nfirst malformed request on the dashboard after {delay:.2f} s")
    assert delay <= SCRAPE_S + PROCESSING_S


def test_the_first_triton_timeout_and_fallback_show_within_one_scrape(run: LiveRun) -> None:
    at = run.incidents.triton_paused_at
    reasons = "|".join(TRITON_FALLBACKS)
    fallbacks = first_rise(
        run, rate("streamrec_worker_fallbacks_total", f'reason=~"{reasons}"'), at
    )
    errors = first_rise(run, rate("streamrec_worker_errors_total", 'component="triton"'), at)
    print(f"\nTriton paused: first fallback on the dashboard after {fallbacks - at:.2f} s, "
          f"first Triton error after {errors - at:.2f} s")  # fmt: skip
    assert fallbacks - at <= SCRAPE_S + PROCESSING_S
    assert errors - at <= SCRAPE_S + PROCESSING_S


def measured_latencies_s(run: LiveRun) -> list[float]:
    """Request appended to Kafka → answer appended, per answer, from the records' broker times.

    The worker's histogram ends a little later, when the answer's delivery is acknowledged
    and the request's offset handed over: :data:`DELIVERY_S` allows for that.
    """
    kafka, topics = run.kafka, run.topics
    appended: dict[str, int] = {}
    requests = request_codec()
    for message in read_range(kafka, topics.requests, {}, high_watermarks(kafka, topics.requests)):
        try:
            appended[requests.decode(message.value()).request_id] = message.timestamp()[1]
        except InvalidRecord:
            continue  # the malformed burst: dead letters, no answer
    codec = recommendation_codec()
    answers = read_range(kafka, topics.recommendations, {},
                         high_watermarks(kafka, topics.recommendations))  # fmt: skip
    return [
        (message.timestamp()[1] - appended[codec.decode(message.value()).request_id]) / 1000
        for message in answers
    ]


def bucket_bounds(low: float, high: float, buckets: Sequence[float]) -> tuple[float, float]:
    """The widest range histogram_quantile can report for samples within low..high."""
    lower = ([0.0, *buckets])[bisect_left(buckets, low)]
    upper = buckets[min(bisect_left(buckets, high), len(buckets) - 1)]
    return lower, upper


def test_latency_panels_read_what_the_records_say_not_the_payload_years(
    run: LiveRun, readings: list[PanelReading]
) -> None:
    latencies = measured_latencies_s(run)
    assert len(latencies) > 50
    lower, upper = bucket_bounds(min(latencies), max(latencies) + DELIVERY_S, LATENCY_BUCKETS)
    panels = [r for r in readings if r.query.panel.startswith("End-to-end latency (Kafka")]
    assert len(panels) == 3 and all(r.has_data for r in panels)
    for reading in panels:
        values = [v for s in reading.series for _, v in s.points if math.isfinite(v)]
        measured = (min(latencies), max(latencies))
        assert lower <= min(values) and max(values) <= upper, (
            reading.query.legend,
            (min(values), max(values)),
            "measured",
            measured,
            (lower, upper),
        )
