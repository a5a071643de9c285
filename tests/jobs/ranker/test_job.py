"""The training job on small real slices: it learns, beats popularity, writes a usable model."""

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
from jobs.ranker.metrics import evaluate
from jobs.ranker.model import DINConfig
from jobs.ranker.settings import TrainSettings
from jobs.ranker.training import TrainConfig, score, train
from schemas.ranking import INPUT_NAMES, SCORES, Vocabulary
from tests.support import requirements

SMALL = [
    "--max-train-rows", "6000", "--max-eval-rows", "300", "--epochs", "3", "--dim", "16",
    "--learning-rate", "0.005", "--full-eval-rows", "300",
]  # fmt: skip
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


def test_training_loss_falls_and_the_model_beats_popularity(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, _ = trained
    losses = metrics["train_loss"]
    assert losses[-1] < losses[0]
    # seeded, so the margin is the same on every run (measured: 0.572 against 0.512)
    assert metrics["model"]["auc"] > metrics["baselines"]["popularity"]["auc"] + 0.03
    assert metrics["model"]["recall_at_50"] > metrics["baselines"]["popularity"]["recall_at_50"]


def test_cli_prints_both_tables_and_one_result_line_last(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, printed = trained
    lines = printed.strip().splitlines()
    assert "covisitation" in printed and "int8" in printed and "fp16" in printed
    assert [line for line in lines if line.startswith("RESULT ")] == [lines[-1]]
    keys = [pair.split("=")[0] for pair in lines[-1].split()[1:]]
    assert keys == [
        "auc", "popularity_auc", "covisit_auc", "served_variant_auc", "recall_at_50",
        "full_recall_at_50", "full_ndcg_at_10",
        "popularity_full_recall_at_50", "popularity_full_ndcg_at_10",
        "recent_full_recall_at_50", "recent_full_ndcg_at_10",
        "covisit_full_recall_at_50", "covisit_full_ndcg_at_10",
        "unseen_positives", "full_eval_rows",
    ]  # fmt: skip
    assert f"auc={metrics['model']['auc']:.4f}" in lines[-1]
    full = metrics["catalogue"]
    assert f"full_recall_at_50={full['model']['recall_at_50']:.4f}" in lines[-1]
    assert f"recent_full_ndcg_at_10={full['recently clicked']['ndcg_at_10']:.4f}" in lines[-1]
    assert f"unseen_positives={metrics['split']['full_eval_unseen']} " in lines[-1]
    assert "Whole catalogue" in printed and "recently clicked" in printed


def test_whole_catalogue_metrics_count_unseen_items_as_misses(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    _, metrics, _ = trained
    split = metrics["split"]
    # three in four held-out clicks of the 9-day file are on items new that day
    assert split["full_eval_rows"] == 300
    assert 0.6 < split["full_eval_unseen"] / split["full_eval_rows"] < 0.9
    ceiling = 1 - split["full_eval_unseen"] / split["full_eval_rows"]
    for name, values in metrics["catalogue"].items():
        assert 0 <= values["recall_at_10"] <= values["recall_at_50"] <= ceiling, name
        assert 0 <= values["ndcg_at_10"] <= values["ndcg_at_50"] <= ceiling, name
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
    assert (out / manifest["served_file"]).is_file()
    assert manifest["seq_len"] == 50
    worker_view = ModelArtifacts.load(out)
    config = DINConfig.load(out / "model_config.json")
    assert worker_view.item_embeddings.shape == (config.num_items, config.dim)
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
    assert variants["int8"]["max_abs_diff"] < 5e-2


def test_trained_onnx_scores_equal_the_saved_pytorch_model(
    trained: tuple[Path, dict[str, Any], str],
) -> None:
    out, _, _ = trained
    model = load_model(out)
    settings = TrainSettings(max_train_rows=10, max_eval_rows=64, epochs=1)
    held_out = build_split(settings, report=lambda _: None).held_out
    feed = {name: getattr(held_out, name) for name in INPUT_NAMES}
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    (onnx_scores,) = session.run([SCORES], feed)
    with torch.no_grad():
        torch_scores = model(*(torch.from_numpy(feed[name]) for name in INPUT_NAMES)).numpy()
    np.testing.assert_allclose(onnx_scores, torch_scores, atol=1e-4)


def _small_training(seed: int) -> tuple[list[float], dict[str, float]]:
    settings = TrainSettings(seed=seed, max_train_rows=1500, max_eval_rows=200, dim=8)
    split = build_split(settings, report=lambda _: None)
    config = DINConfig(split.catalog.vocab.num_items, split.catalog.vocab.num_categories, dim=8)
    model, losses = train(config, split.train, TrainConfig(epochs=1, seed=seed), lambda _: None)
    return losses, evaluate(score(model, split.held_out), split.held_out.labels)


def test_same_seed_gives_the_same_losses_and_metrics() -> None:
    first, second = _small_training(seed=3), _small_training(seed=3)
    assert first == second
    assert _small_training(seed=4)[0] != first[0]


def test_movielens_runs_through_the_same_code_path(tmp_path: Path) -> None:
    """The second dataset trains, exports and evaluates end to end.

    A slice this small does not rank well on MovieLens (AUC near 0.5), so the
    checks are what the code path must get right whatever the data: the loss
    falls, every exported variant scores what the fp32 model scores, and the
    RESULT line reports the metrics file's own numbers.
    """
    requirements.dataset("movielens")
    out = tmp_path / "ml"
    printed = io.StringIO()
    argv = ["--dataset", "movielens", "--max-train-rows", "1500", "--max-eval-rows", "150"]
    argv += ["--full-eval-rows", "40"]  # bulk-rating sessions: long sequences, slow to score
    with contextlib.redirect_stdout(printed):
        main([*argv, "--epochs", "2", "--dim", "8", "--out", str(out)])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dataset"] == "movielens"
    losses = metrics["train_loss"]
    assert len(losses) == 2 and losses[1] < losses[0]
    auc = metrics["model"]["auc"]
    for variant in metrics["variants"]:
        assert abs(variant["auc"] - auc) < 0.01, variant
    result = printed.getvalue().strip().splitlines()[-1]
    assert result.startswith(f"RESULT auc={auc:.4f} ")
