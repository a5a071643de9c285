from __future__ import annotations

import pytest

from tests.benchmarks.capacity import INPUTS, Assumptions, need, parse_inputs, plan
from tests.benchmarks.report import BenchmarkFailure

FIGURES: dict[str, dict[str, float]] = {
    "features": {"events_per_s": 50_000, "changelog_rows_per_event": 2.0},
    "writer": {"records_per_s": 10_000, "redis_cpu_us_per_record": 20},
    "ingest": {"raw_produce_eps": 100_000, "box_cores": 2},
    "sla": {"sla_rps": 500, "candidates_per_request": 100, "box_cores": 2},
    "serving": {"served_cands_per_s": 100_000, "box_cores": 2},
    "gpu": {"served_cands_per_s": 10_000_000},
}


def test_inputs_parse_result_lines_and_skip_labels() -> None:
    parsed = parse_inputs(["# note", "", "x: RESULT a=1 b=2.5 speedup=3.0x index=IVF:nprobe=8"])
    assert parsed == {"x": {"a": 1.0, "b": 2.5, "speedup": 3.0}}
    with pytest.raises(BenchmarkFailure, match="RESULT"):
        parse_inputs(["x: a=1"])


def test_the_committed_inputs_have_every_figure_the_model_reads() -> None:
    figures = parse_inputs(INPUTS.read_text().splitlines())
    assert plan(1000, figures, Assumptions()).gpus == 1


def test_units_are_rounded_up_at_the_planned_fill() -> None:
    assert need(70, 100, 0.7) == 1
    assert need(71, 100, 0.7) == 2
    assert need(0, 100, 0.7) == 1  # a stage never drops to zero machines


def test_every_stage_scales_with_the_request_rate() -> None:
    a = Assumptions(fill=1.0, redis_fill=1.0, redis_read_us=0.0, broker_cores=2)
    small, big = plan(1_000, FIGURES, a), plan(10_000, FIGURES, a)
    # 1k rps: 50k events/s, 100k rows/s, 100k candidates/s.
    assert (small.slots, small.writers, small.redis_shards) == (1, 10, 2)
    assert (small.workers_cores, small.ranking_cores, small.gpus) == (4, 2, 1)
    # Kafka: (50k + 100k + 2k) records x 3 replicas over 100k/s per 2-core broker.
    assert small.brokers == 5
    assert (big.slots, big.writers, big.redis_shards, big.ranking_cores) == (10, 100, 20, 20)
    assert big.cost_gpu_per_million < small.cost_gpu_per_million  # the GPU fills up
    with pytest.raises(BenchmarkFailure, match="lack the figure"):
        plan(1_000, {k: v for k, v in FIGURES.items() if k != "gpu"}, a)
