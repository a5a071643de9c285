"""The training job on small real slices: it learns, beats the heuristics, writes a usable model."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import torch

from inference.worker.artifacts import ModelArtifacts
from jobs.ranker.__main__ import main
from jobs.ranker.artifacts import load_model
from jobs.ranker.events import PROFILES, holdout_start, in_range, load_events
from jobs.ranker.job import build_split
from jobs.ranker.lighten import list_auc
from jobs.ranker.list_rows import list_rows
from jobs.ranker.model import DINConfig
from jobs.ranker.settings import TrainSettings
from jobs.ranker.training import TrainConfig, score, train
from schemas.ranking import INPUT_NAMES, SCORES, Vocabulary
from tests.support import requirements

SMALL = ["--max-train-rows", "4000", "--max-eval-rows", "1200", "--epochs", "6", "--dim", "16"]
DEC_3_UTC8 = 1_512_230_400_000  # 2017-12-03 00:00 in UTC+8, the file's last day
ARTIFACTS = (
    "model.onnx",
    "model.int8.onnx",
    "model.fp16.onnx",
    "model.pt",
    "model_config.json",
    "network.py",
    "vocab.npz",
    "item_embeddings.npy",
    "item_categories.npy",
    "popular_items.json",
    "metrics.json",
    "manifest.json",
)


@pytest.fixture(scope="module", autouse=True)
def taobao_9days() -> Path:
    return requirements.dataset("taobao-9days")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    out = tmp_path_factory.mktemp("models") / "ranker"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*SMALL, "--out", str(out)]) == 0
    return out, json.loads((out / "metrics.json").read_text()), printed.getvalue()


def test_training_loss_falls_and_the_model_beats_the_heuristics(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, _ = trained
    losses = metrics["train_loss"]
    assert losses[-1] < losses[0]
    lists = metrics["lists"]
    # seeded, so the margins are the same on every run
    assert lists["model"]["hit_at_10"] > lists["norank"]["hit_at_10"]
    assert lists["model"]["ndcg_at_10"] > lists["norank"]["ndcg_at_10"]
    assert lists["model"]["hit_at_10"] > 10 * lists["popular"]["hit_at_10"]
    assert metrics["beats_recall_order"] is True
    ratio = metrics["hit_ratio_vs_norank"]
    assert ratio["low"] <= ratio["ratio"] <= ratio["high"]


def test_cli_prints_the_tables_and_one_result_line_last(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, printed = trained
    lines = printed.strip().splitlines()
    assert "LambdaMART" in printed and "recent-first" in printed and "int8" in printed
    assert [line for line in lines if line.startswith("RESULT ")] == [lines[-1]]
    keys = [pair.split("=")[0] for pair in lines[-1].split()[1:]]
    assert keys[:5] == [
        "hit_at_10", "ndcg_at_10", "new_item_hit_at_10", "norank_hit_at_10", "norank_ndcg_at_10",
    ]  # fmt: skip
    assert {"recent_first_hit_at_10", "popular_ndcg_at_10", "lambdamart_ndcg_at_10"} <= set(keys)
    assert f"hit_at_10={metrics['lists']['model']['hit_at_10']:.4f}" in lines[-1]
    full = metrics["catalogue"]
    assert f"full_recall_at_50={full['model']['recall_at_50']:.4f}" in lines[-1]
    assert f"recent_full_ndcg_at_10={full['recently clicked']['ndcg_at_10']:.4f}" in lines[-1]
    assert "Whole catalogue" in printed and "recently clicked" in printed


def test_whole_catalogue_metrics_stay_within_what_recall_can_reach(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, _ = trained
    for name, values in metrics["catalogue"].items():
        assert 0 <= values["recall_at_10"] <= values["recall_at_50"] <= 1, name
        assert 0 <= values["ndcg_at_10"] <= values["ndcg_at_50"] <= 1, name
    # users come back to what they just clicked: that beats the popularity order
    recent, popular = metrics["catalogue"]["recently clicked"], metrics["catalogue"]["popularity"]
    assert recent["recall_at_50"] > popular["recall_at_50"]


def test_the_adaptive_default_holds_out_the_last_day_of_the_9_day_file() -> None:
    events, _ = load_events("taobao-9days")
    profile = PROFILES["taobao-9days"]
    assert profile.holdout_days == 0  # adaptive, not fitted to this file
    assert holdout_start(in_range(events, profile), profile) == DEC_3_UTC8


def test_model_directory_is_complete_and_loadable(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    out, metrics, _ = trained
    assert sorted(p.name for p in out.iterdir()) == sorted(ARTIFACTS)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no staging left
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["served_variant"] == metrics["served_variant"]
    assert manifest["beats_recall_order"] == metrics["beats_recall_order"]
    assert (out / manifest["served_file"]).is_file()
    assert manifest["seq_len"] == 50
    worker_view = ModelArtifacts.load(out)
    config = DINConfig.load(out / "model_config.json")
    assert worker_view.item_embeddings.shape[0] == config.num_items
    assert Vocabulary.load(out / "vocab.npz").num_items == config.num_items
    assert len(worker_view.popular_items) > 10


def test_served_variant_is_within_the_auc_budget(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, _ = trained
    variants = {v["variant"]: v for v in metrics["variants"]}
    assert set(variants) == {"fp32", "int8", "fp16"}
    served = variants[metrics["served_variant"]]
    assert served["auc_loss"] <= 0.005
    assert variants["fp16"]["max_abs_diff"] < 5e-3


def test_trained_onnx_scores_equal_the_saved_pytorch_model(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    out, _, _ = trained
    model = load_model(out)
    settings = TrainSettings(max_train_rows=300, max_eval_rows=64, epochs=1)
    held_out = list_rows(build_split(settings, report=lambda _: None).held_out)
    feed = {name: getattr(held_out, name) for name in INPUT_NAMES}
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    (onnx_scores,) = session.run([SCORES], feed)
    with torch.no_grad():
        torch_scores = model(*(torch.from_numpy(feed[name]) for name in INPUT_NAMES)).numpy()
    np.testing.assert_allclose(onnx_scores, torch_scores, atol=1e-4)


def _small_training(seed: int) -> tuple[list[float], float]:
    settings = TrainSettings(seed=seed, max_train_rows=1500, max_eval_rows=200, dim=8)
    split = build_split(settings, report=lambda _: None)
    config = DINConfig(split.catalog.vocab.num_items, split.catalog.vocab.num_categories, dim=8)
    rows, held = list_rows(split.train), list_rows(split.held_out)
    model, losses = train(config, rows, TrainConfig(epochs=1, seed=seed), lambda _: None)
    return losses, list_auc(score(model, held), held)


def test_same_seed_gives_the_same_losses_and_metrics() -> None:
    first, second = _small_training(seed=3), _small_training(seed=3)
    assert first == second
    assert _small_training(seed=4)[0] != first[0]


def test_movielens_runs_through_the_same_code_path(tmp_path: Path) -> None:
    """The second dataset trains, exports and evaluates end to end: the loss falls, every
    exported variant scores what the fp32 model scores, and the RESULT line reports the
    metrics file's own numbers."""
    requirements.dataset("movielens")
    out = tmp_path / "ml"
    printed = io.StringIO()
    argv = ["--dataset", "movielens", "--max-train-rows", "1500", "--max-eval-rows", "300"]
    with contextlib.redirect_stdout(printed):
        main([*argv, "--epochs", "3", "--dim", "8", "--out", str(out)])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dataset"] == "movielens"
    losses = metrics["train_loss"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    fp32 = next(v for v in metrics["variants"] if v["variant"] == "fp32")["auc"]
    for variant in metrics["variants"]:
        assert abs(variant["auc"] - fp32) < 0.01, variant
    result = printed.getvalue().strip().splitlines()[-1]
    assert result.startswith(f"RESULT hit_at_10={metrics['lists']['model']['hit_at_10']:.4f} ")
