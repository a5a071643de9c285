"""Seeded training of the DIN ranker and batched scoring with PyTorch."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from jobs.ranker.model import DIN, DINConfig
from jobs.ranker.samples import Samples
from jobs.ranker.windows import F32
from schemas.ranking import PAD_INDEX

_MODEL_INPUTS = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    batch_size: int = 256
    learning_rate: float = 2e-3
    weight_decay: float = 0.0
    seed: int = 7
    threads: int = 2


def seed_everything(seed: int, threads: int) -> None:
    """Same seed, same weights, same batches, same metrics (CPU kernels are deterministic)."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def _tensors(samples: Samples, rows: npt.NDArray[np.intp] | slice) -> list[torch.Tensor]:
    return [
        torch.from_numpy(np.ascontiguousarray(getattr(samples, n)[rows])) for n in _MODEL_INPUTS
    ]


def train(
    model_config: DINConfig,
    samples: Samples,
    config: TrainConfig,
    report: Callable[[str], None] = print,
) -> tuple[DIN, list[float]]:
    """A trained model and its mean training loss per epoch."""
    seed_everything(config.seed, config.threads)
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # only for this call: callers keep theirs
    try:
        return _train(model_config, samples, config, report)
    finally:
        torch.use_deterministic_algorithms(deterministic)


def _train(
    model_config: DINConfig,
    samples: Samples,
    config: TrainConfig,
    report: Callable[[str], None],
) -> tuple[DIN, list[float]]:
    model = DIN(model_config)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    loss_fn = nn.BCEWithLogitsLoss()
    order_rng = np.random.default_rng(config.seed)
    losses = []
    for epoch in range(1, config.epochs + 1):
        started = time.perf_counter()
        model.train()
        order = order_rng.permutation(len(samples))
        total = 0.0
        for lo in range(0, len(order), config.batch_size):
            rows = order[lo : lo + config.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(
                model.logits(*_tensors(samples, rows)), torch.from_numpy(samples.labels[rows])
            )
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / len(order))
        report(
            f"epoch {epoch}/{config.epochs}: loss {losses[-1]:.4f} "
            f"({len(order)} rows, {time.perf_counter() - started:.1f}s)"
        )
    return model.eval(), losses


def score(model: DIN, samples: Samples, batch_size: int = 512) -> F32:
    """Click probabilities [N, C] for every row's candidates."""
    model.eval()
    parts = []
    with torch.no_grad():
        for lo in range(0, len(samples), batch_size):
            parts.append(model(*_tensors(samples, slice(lo, lo + batch_size))).numpy())
    scores: F32 = np.concatenate(parts).astype(np.float32)
    return scores


def catalogue_logits(
    model: DIN,
    seq_items: npt.NDArray[np.int32],
    seq_cats: npt.NDArray[np.int32],
    user_dense: F32,
    cand_items: npt.NDArray[np.int32],
    cand_cats: npt.NDArray[np.int32],
    cand_dense: F32,
) -> F32:
    """Logits [C] of every candidate for ONE row (sequence [L], candidates [C]).

    Logits, not probabilities: the sigmoid rounds the top scores to 1.0 in
    float32, and ranking the whole catalogue must not tie them. The sequence's
    left padding is cut off first (the model masks it, so the scores are the
    same) because the pair attention costs L x C: with a catalogue of ~19k
    items, a few real events instead of SEQ_LEN positions is a 5-10x saving.
    """
    valid = np.flatnonzero(seq_items != PAD_INDEX)
    first = int(valid[0]) if len(valid) else len(seq_items) - 1  # keep one (masked) slot
    inputs = (
        seq_items[first:],
        seq_cats[first:],
        user_dense,
        cand_items,
        cand_cats,
        cand_dense,
    )
    model.eval()
    with torch.no_grad():
        logits = model.logits(*(torch.from_numpy(np.ascontiguousarray(a))[None] for a in inputs))
    out: F32 = logits[0].numpy().astype(np.float32)
    return out
