"""Seeded training of the DIN ranker on whole candidate lists, and batched scoring.

The loss is listwise: a softmax over each request's real candidates against the
share of its touched ones (rows where nothing was touched carry no ranking
signal and are left out by the caller). Id dropout replaces a share of the item
ids with the OOV index while training, so that the OOV path, which most of a
live stream's items take, is trained rather than left at its random start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from jobs.ranker.list_rows import ListRows
from jobs.ranker.model import DIN, DINConfig
from jobs.ranker.windows import F32
from schemas.ranking import OOV_INDEX, PAD_INDEX

_MODEL_INPUTS = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    batch_size: int = 256
    learning_rate: float = 2e-3
    weight_decay: float = 1e-5
    seed: int = 7
    threads: int = 2
    id_dropout: float = 0.5


def seed_everything(seed: int, threads: int) -> None:
    """Same seed, same weights, same batches, same metrics (CPU kernels are deterministic)."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def _tensors(samples: ListRows, rows: npt.NDArray[np.intp] | slice) -> list[torch.Tensor]:
    """The rows' model inputs, the sequences cut to the batch's longest: the pair attention
    costs L x C, the network masks padding (the scores are the same), and fresh views are
    mostly a few events long."""
    arrays = [np.ascontiguousarray(getattr(samples, n)[rows]) for n in _MODEL_INPUTS]
    valid = (arrays[0] != PAD_INDEX).any(axis=0)
    first = int(np.argmax(valid)) if valid.any() else arrays[0].shape[1] - 1
    arrays[0], arrays[1] = arrays[0][:, first:], arrays[1][:, first:]
    return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]


def train(
    model_config: DINConfig,
    samples: ListRows,
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
    samples: ListRows,
    config: TrainConfig,
    report: Callable[[str], None],
) -> tuple[DIN, list[float]]:
    model = DIN(model_config)
    model.standardise_by(torch.from_numpy(samples.cand_dense), torch.from_numpy(samples.mask))
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    order_rng = np.random.default_rng(config.seed)
    drop_rng = torch.Generator().manual_seed(config.seed)
    losses = []
    for epoch in range(1, config.epochs + 1):
        started = time.perf_counter()
        model.train()
        order = order_rng.permutation(len(samples))
        total = 0.0
        for lo in range(0, len(order), config.batch_size):
            rows = order[lo : lo + config.batch_size]
            optimizer.zero_grad()
            inputs = _tensors(samples, rows)
            for slot in (0, 3):  # seq_items, cand_items
                inputs[slot] = _drop_ids(inputs[slot], config.id_dropout, drop_rng)
            loss = listwise_loss(
                model.logits(*inputs),
                torch.from_numpy(samples.labels[rows]),
                torch.from_numpy(samples.mask[rows]),
            )
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / len(order))
        report(
            f"epoch {epoch}/{config.epochs}: loss {losses[-1]:.4f} "
            f"({len(order)} rows, {time.perf_counter() - started:.1f}s)"
        )
    return model.eval(), losses


def _drop_ids(ids: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    if share <= 0:
        return ids
    drop = (torch.rand(ids.shape, generator=generator) < share) & (ids != PAD_INDEX)
    return torch.where(drop, torch.full_like(ids, OOV_INDEX), ids)


def listwise_loss(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the softmax over each row's real candidates against its labels'
    distribution (rows need one positive at least)."""
    masked = logits.masked_fill(~mask, -1.0e4)
    target = labels * mask / (labels * mask).sum(dim=1, keepdim=True).clamp_min(1.0)
    return -(target * torch.log_softmax(masked, dim=1)).sum(dim=1).mean()


def score(model: DIN, samples: ListRows, batch_size: int = 512) -> F32:
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
