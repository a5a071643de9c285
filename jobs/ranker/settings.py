"""Settings of the training job: one frozen object from flags and ``STREAMREC_TRAIN_*``.

The output folder is ``STREAMREC_MODEL_DIR`` (shared with serving and the worker,
which read from it), else ``.cache/ranker``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from jobs.datasets import DATASETS

ENV_PREFIX = "STREAMREC_TRAIN_"
DEFAULT_MODEL_DIR = Path(".cache", "ranker")


def default_model_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("STREAMREC_MODEL_DIR") or DEFAULT_MODEL_DIR)


@dataclass(frozen=True)
class TrainSettings:
    dataset: str = "taobao-9days"
    file: Path | None = None  # data file or folder; the dataset's default under the data dir
    out: Path = DEFAULT_MODEL_DIR
    epochs: int = 3
    seed: int = 7
    negatives: int = 4  # sampled negatives per positive in training
    eval_negatives: int = 99  # per held-out positive, beside the true item
    dim: int = 32
    batch_size: int = 256
    learning_rate: float = 2e-3
    max_train_rows: int = 0  # 0 = every positive of the train split
    max_eval_rows: int = 0
    holdout_days: int = 0  # 0 = the dataset's own (Taobao: the last day)
    # The fresh view serving reads holds a user's last 30 minutes of events.
    sequence_horizon_min: int = 30
    threads: int = 2

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown dataset {self.dataset!r}; choose one of {DATASETS}")
        for name in ("epochs", "negatives", "eval_negatives", "dim", "batch_size", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("max_train_rows", "max_eval_rows", "holdout_days", "sequence_horizon_min"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


_HELP = {
    "dataset": f"dataset adapter ({', '.join(DATASETS)})",
    "file": "data file (MovieLens: its folder); default: the dataset's file in the data dir",
    "out": "model directory to write (default: $STREAMREC_MODEL_DIR or .cache/ranker)",
    "epochs": "training epochs",
    "seed": "seed of sampling, initialisation and batch order",
    "negatives": "sampled negatives per positive for training",
    "eval_negatives": "sampled negatives per held-out positive (ranked with the true item)",
    "dim": "embedding size",
    "batch_size": "rows (users' positives) per training step",
    "learning_rate": "Adam learning rate",
    "max_train_rows": "use at most this many train positives, sampled (0 = all)",
    "max_eval_rows": "use at most this many held-out positives, sampled (0 = all)",
    "holdout_days": "hold out the last N calendar days (0 = the dataset's default)",
    "sequence_horizon_min": "sequence = events within N minutes before the user's latest one, "
    "as the serving fresh view holds them (0 = the last 50 of the whole history)",
    "threads": "PyTorch and ONNX Runtime threads",
}


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="python -m jobs.ranker",
        description="Train the DIN ranker with a split by time, evaluate it against "
        "popularity and co-visitation, export FP32/INT8/FP16 ONNX and write the model "
        "directory. Every flag can also be set as STREAMREC_TRAIN_<FLAG>.",
    )
    for spec in fields(TrainSettings):
        flag = "--" + spec.name.replace("_", "-")
        result.add_argument(flag, type=_kind(spec.name), default=None, help=_HELP[spec.name])
    return result


def _kind(name: str) -> type:
    """The flag's value type: paths for files, else the default's type."""
    return Path if name in ("file", "out") else type(getattr(TrainSettings, name))


def _parse(name: str, raw: str) -> object:
    return _kind(name)(raw)


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> TrainSettings:
    """Flags win over ``STREAMREC_TRAIN_*`` variables, which win over defaults."""
    env = os.environ if environ is None else environ
    args = vars(parser().parse_args(argv))
    values: dict[str, object] = {"out": default_model_dir(env)}
    for spec in fields(TrainSettings):
        raw = env.get(ENV_PREFIX + spec.name.upper())
        if raw:
            values[spec.name] = _parse(spec.name, raw)
        if args[spec.name] is not None:
            values[spec.name] = args[spec.name]
    return TrainSettings(**values)  # type: ignore[arg-type]
