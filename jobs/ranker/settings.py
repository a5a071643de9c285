"""Settings of the training job: one frozen object from flags and ``STREAMREC_TRAIN_*``.

The output folder is ``STREAMREC_MODEL_DIR`` (shared with serving and the worker,
which read from it) unless ``--out``/``STREAMREC_TRAIN_OUT`` names another one.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.datasets import DATASETS
from runtime.settings import (
    DEFAULT_MODEL_DIR,
    MODEL_DIR_ENV,
    Settings,
    SettingsError,
    model_dir,
    setting,
)

ENV_PREFIX = "STREAMREC_TRAIN_"


@dataclass(frozen=True)
class TrainSettings(Settings):
    dataset: str = setting(
        "taobao-9days", env="STREAMREC_TRAIN_DATASET", help=f"one of {', '.join(DATASETS)}"
    )
    file: Path | None = setting(
        None,
        env="STREAMREC_TRAIN_FILE",
        help="data file (MovieLens: its folder)",
        shown="the dataset's file in the data dir",
    )
    out: Path = setting(
        DEFAULT_MODEL_DIR,
        env="STREAMREC_TRAIN_OUT",
        help="model directory to write",
        shown=f"${MODEL_DIR_ENV} or {DEFAULT_MODEL_DIR}",
    )
    epochs: int = setting(8, env="STREAMREC_TRAIN_EPOCHS", help="training epochs")
    seed: int = setting(
        7, env="STREAMREC_TRAIN_SEED", help="seed of sampling, initialisation and batch order"
    )
    dim: int = setting(32, env="STREAMREC_TRAIN_DIM", help="embedding size")
    batch_size: int = setting(
        256, env="STREAMREC_TRAIN_BATCH_SIZE", help="requests (candidate lists) per training step"
    )
    learning_rate: float = setting(
        2e-3, env="STREAMREC_TRAIN_LEARNING_RATE", help="Adam learning rate"
    )
    max_train_rows: int = setting(
        0,
        env="STREAMREC_TRAIN_MAX_TRAIN_ROWS",
        help="replay at most this many train requests, sampled (0 = every event of the "
        "train period's last part)",
    )
    max_eval_rows: int = setting(
        0,
        env="STREAMREC_TRAIN_MAX_EVAL_ROWS",
        help="replay at most this many held-out requests, sampled (0 = every held-out event)",
    )
    # A fixed number of days fits one file's span only; 0 adapts to the data.
    holdout_days: int = setting(
        0,
        env="STREAMREC_TRAIN_HOLDOUT_DAYS",
        help="hold out the last N calendar days (0 = the days holding the last tenth of "
        "events, whatever span the data covers)",
    )
    threads: int = setting(2, env="STREAMREC_TRAIN_THREADS", help="PyTorch and ONNX threads")
    # The retraining loop passes the champion: a candidate must beat it on these rows.
    baseline: Path | None = setting(
        None,
        env="STREAMREC_TRAIN_BASELINE",
        help="a model directory scored on the same held-out rows (metrics.json: against)",
    )
    # Also on whenever MLFLOW_TRACKING_URI is set (jobs/ranker/registry.py).
    register: bool = setting(
        False,
        env="STREAMREC_TRAIN_REGISTER",
        help="log the run in MLflow and register the model directory as a version of "
        "streamrec-ranker (on whenever MLFLOW_TRACKING_URI is set; without it, the local "
        "stack's server at http://127.0.0.1:5000)",
    )

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise SettingsError(f"unknown dataset {self.dataset!r}; choose one of {DATASETS}")
        for name in ("epochs", "dim", "batch_size", "threads"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be at least 1 ({self.variable(name)})")
        for name in ("max_train_rows", "max_eval_rows", "holdout_days"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} must not be negative ({self.variable(name)})")


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="streamrec-train",
        description="Train the ranker on candidate lists replayed from the store with a "
        "split by time, evaluate it against the recall order, recent-first, popularity "
        "and LambdaMART on the held-out lists and against co-visitation and "
        "recently-clicked over the whole catalogue, export FP32/INT8/FP16 ONNX and write "
        "the model directory. Every flag defaults to its environment variable (in brackets).",
    )
    TrainSettings.add_flags(result)
    return result


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> TrainSettings:
    """Flags win over ``STREAMREC_TRAIN_*`` variables, which win over defaults."""
    args = parser().parse_args(argv)
    return TrainSettings.load(environ, args, out=model_dir(environ))
