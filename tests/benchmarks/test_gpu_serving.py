"""The GPU serving benchmark's pure parts: FLOPs, per-run config overrides, served/raw ratios."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format  # type: ignore[import-untyped]
from tritonclient.grpc import model_config_pb2  # type: ignore[import-untyped]

from inference.serving.settings import TEMPLATE_REPOSITORY
from jobs.ranker.network import DINConfig
from tests.benchmarks import triton_config
from tests.benchmarks.gpu_model import flops_per_candidate
from tests.benchmarks.gpu_serving import ratios


def test_flops_per_candidate_of_the_reference_model() -> None:
    """Dim 64, 200 candidates: the 0.49 MFLOP per candidate of the design notes, by hand."""
    config = DINConfig(num_items=10, num_categories=5, dim=64, id_inputs=True)
    width, hidden, seq = 128, 32, 50
    head = (3 * width + 4 + 24) * 64 + 64 * 32 + 32
    by_hand = (
        2 * (width * hidden + seq * hidden * width + seq * hidden + seq * width + head)
        + 2 * seq * width * hidden / 200
    )
    assert flops_per_candidate(config, 200) == pytest.approx(by_hand)
    assert flops_per_candidate(config, 200) == pytest.approx(0.49e6, rel=0.01)


def test_a_run_overrides_instances_batching_and_parameters() -> None:
    text = (TEMPLATE_REPOSITORY / "ranker_torch" / "config.pbtxt").read_text()
    fields = {
        "max_batch_size": "max_batch_size: 512",
        "instance_group": "instance_group [ { kind: KIND_GPU count: 4 } ]",
        "dynamic_batching": "dynamic_batching { preferred_batch_size: [64, 128] "
        "max_queue_delay_microseconds: 250 }",
    }
    written = triton_config.override(text, fields, {"compile": "on", "candidate_buckets": "200"})
    before = text_format.Parse(text, model_config_pb2.ModelConfig())
    after = text_format.Parse(written, model_config_pb2.ModelConfig())
    assert after.max_batch_size == 512
    assert [(g.kind, g.count) for g in after.instance_group] == [
        (model_config_pb2.ModelInstanceGroup.KIND_GPU, 4)
    ]
    assert list(after.dynamic_batching.preferred_batch_size) == [64, 128]
    assert after.dynamic_batching.max_queue_delay_microseconds == 250
    parameters = {k: v.string_value for k, v in after.parameters.items()}
    assert parameters["compile"] == "on" and parameters["candidate_buckets"] == "200"
    assert parameters["intra_op_threads"] == "1"  # untouched ones stay
    assert (after.input, after.output, after.name) == (before.input, before.output, before.name)


def test_statements_keep_strings_and_comments_apart() -> None:
    text = 'name: "a # not a comment }"  # a comment {\nblock { x: "]" y [ 1, 2 ] }\nn: 3\n'
    assert triton_config.statements(text) == [
        ("name", 'name: "a # not a comment }"'),
        ("block", 'block { x: "]" y [ 1, 2 ] }'),
        ("n", "n: 3"),
    ]


def test_ratios_at_saturation_and_within_10_ms(tmp_path: Path) -> None:
    rows = [
        {"cands_per_s": 8e6, "p99_ms": 30.0},
        {"cands_per_s": 3e6, "p99_ms": 9.0},
        {"cands_per_s": 1e6, "p99_ms": 2.0},
    ]
    report = {
        "raw_cands_per_s": {"eager": {"64": 5e6}, "compile": {"64": 9e6, "256": 10e6}},
        "served": rows,
        "flops_per_candidate": 0.5e6,
        "peak_tflops": 1000.0,
    }
    figures = ratios(report)
    assert figures["raw_best"] == "compile@256users"
    assert figures["served_over_raw"] == pytest.approx(0.8)
    assert figures["served_over_raw_at_p99_le_10ms"] == pytest.approx(0.3)
    assert figures["raw_fraction_of_peak"] == pytest.approx(10e6 * 0.5e6 / 1e15)
    assert ratios({**report, "served": rows[:1]})["at_p99_le_10ms"] is None
