"""Settings precedence, the served-variant rule and the all-or-nothing model directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.ranker.artifacts import atomic_directory
from jobs.ranker.lighten import VariantReport, choose_served
from jobs.ranker.settings import load_settings


def test_flags_win_over_environment_which_wins_over_defaults() -> None:
    env = {"STREAMREC_TRAIN_EPOCHS": "5", "STREAMREC_TRAIN_SEED": "9", "STREAMREC_MODEL_DIR": "/m"}
    settings = load_settings(["--epochs", "2", "--dataset", "movielens"], env)
    assert settings.epochs == 2
    assert settings.seed == 9
    assert settings.dataset == "movielens"
    assert settings.out == Path("/m")
    assert load_settings([], {}).out == Path(".cache", "ranker")
    assert load_settings(["--out", "x"], env).out == Path("x")


def test_bad_settings_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        load_settings(["--dataset", "nope"], {})
    with pytest.raises(ValueError, match="epochs"):
        load_settings(["--epochs", "0"], {})


def test_help_lists_the_flags() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jobs.ranker", "--help"], capture_output=True, text=True, check=True
    )
    for flag in ("--dataset", "--out", "--epochs", "--seed", "--max-train-rows", "--max-eval-rows"):
        assert flag in done.stdout


def _report(variant: str, auc_loss: float, speed: float) -> VariantReport:
    return VariantReport(variant, f"{variant}.onnx", 0.9 - auc_loss, auc_loss, 0.0, speed, 1.0)


def test_served_variant_is_the_fastest_within_the_auc_budget() -> None:
    reports = [_report("fp32", 0.0, 100), _report("int8", 0.004, 300), _report("fp16", 0.0, 200)]
    assert choose_served(reports).variant == "int8"
    reports[1] = _report("int8", 0.02, 300)
    assert choose_served(reports).variant == "fp16"
    assert choose_served([_report("fp32", 0.0, 100), _report("int8", 0.01, 300)]).variant == "fp32"


def test_directory_is_replaced_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "ranker"
    with atomic_directory(target) as staging:
        (staging / "model.onnx").write_text("v1")
        assert not target.exists()
    assert (target / "model.onnx").read_text() == "v1"
    with pytest.raises(RuntimeError), atomic_directory(target) as staging:
        (staging / "model.onnx").write_text("half")
        raise RuntimeError("export failed")
    assert (target / "model.onnx").read_text() == "v1"
    with atomic_directory(target) as staging:
        (staging / "model.onnx").write_text("v2")
    assert (target / "model.onnx").read_text() == "v2"
    assert [p.name for p in tmp_path.iterdir()] == ["ranker"]
