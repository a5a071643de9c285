"""FP32 / INT8 / FP16 ONNX variants: held-out AUC, scoring speed, the served default.

The served default is the fastest variant whose AUC is within ``MAX_AUC_LOSS``
of FP32's, measured on the same rows; FP32 when none qualifies.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort  # type: ignore[import-untyped]

from jobs.ranker.list_rows import ListRows
from jobs.ranker.metrics import auc
from jobs.ranker.windows import F32
from schemas.ranking import INPUT_NAMES, SCORES

MAX_AUC_LOSS = 0.005
SPEED_USERS = 64  # users per scoring call, each with all its candidates
SPEED_ROUNDS = 7
VARIANT_FILES = {"fp32": "model.onnx", "int8": "model.int8.onnx", "fp16": "model.fp16.onnx"}


@dataclass(frozen=True)
class VariantReport:
    variant: str
    file: str
    auc: float
    auc_loss: float  # FP32 AUC minus this variant's
    max_abs_diff: float  # largest score difference from FP32 on the held-out rows
    candidates_per_s: float
    speedup: float  # against FP32

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


def session(path: Path, threads: int = 2) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _feed(samples: ListRows, rows: slice) -> dict[str, npt.NDArray[Any]]:
    return {name: np.ascontiguousarray(getattr(samples, name)[rows]) for name in INPUT_NAMES}


def onnx_scores(runner: ort.InferenceSession, samples: ListRows, batch_size: int = 256) -> F32:
    parts = [
        runner.run([SCORES], _feed(samples, slice(lo, lo + batch_size)))[0]
        for lo in range(0, len(samples), batch_size)
    ]
    scores: F32 = np.concatenate(parts).astype(np.float32)
    return scores


def candidates_per_second(
    runner: ort.InferenceSession, feed: dict[str, npt.NDArray[Any]], seconds: float
) -> float:
    """Scoring speed on one fixed batch, for about ``seconds``."""
    per_call = feed[INPUT_NAMES[3]].size
    calls, started = 0, time.perf_counter()
    while calls == 0 or time.perf_counter() - started < seconds:
        runner.run([SCORES], feed)
        calls += 1
    return calls * per_call / (time.perf_counter() - started)


def median_speeds(
    runners: dict[str, ort.InferenceSession],
    samples: ListRows,
    users: int = SPEED_USERS,
    rounds: int = SPEED_ROUNDS,
) -> dict[str, float]:
    """Candidates/s of each runner on the same batch: alternating rounds, medians.

    The machine is shared and noisy; alternating puts every variant through the
    same noise, and the median drops the round a neighbour's burst spoiled.
    """
    feed = _feed(samples, slice(0, users))
    for runner in runners.values():  # warm-up: allocations and kernel selection
        for _ in range(3):
            runner.run([SCORES], feed)
    speeds: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, runner in runners.items():
            speeds[name].append(candidates_per_second(runner, feed, seconds=0.3))
    return {name: float(np.median(values)) for name, values in speeds.items()}


def list_auc(scores: F32, rows: ListRows) -> float:
    """AUC over the real candidates of every list (padding left out): how well a
    variant keeps the touched candidates above the others, to compare variants."""
    return auc(scores[rows.mask], rows.labels[rows.mask])


def compare_variants(directory: Path, samples: ListRows, threads: int = 2) -> list[VariantReport]:
    """One report per variant file in ``directory``, FP32 first."""
    runners = {
        variant: session(directory / file, threads) for variant, file in VARIANT_FILES.items()
    }
    scores_of = {variant: onnx_scores(runner, samples) for variant, runner in runners.items()}
    speeds = median_speeds(runners, samples)
    base_scores, base_speed = scores_of["fp32"], speeds["fp32"]
    base_auc = list_auc(base_scores, samples)
    reports = []
    for variant, scores in scores_of.items():
        speed = speeds[variant]
        variant_auc = list_auc(scores, samples)
        reports.append(
            VariantReport(
                variant=variant,
                file=VARIANT_FILES[variant],
                auc=variant_auc,
                auc_loss=base_auc - variant_auc,
                max_abs_diff=float(np.abs(scores - base_scores).max()),
                candidates_per_s=speed,
                speedup=speed / base_speed,
            )
        )
    return reports


def choose_served(
    reports: list[VariantReport], max_auc_loss: float = MAX_AUC_LOSS
) -> VariantReport:
    """The fastest variant within ``max_auc_loss`` of FP32 (FP32 itself always qualifies)."""
    eligible = [r for r in reports if r.variant == "fp32" or r.auc_loss <= max_auc_loss]
    return max(eligible, key=lambda r: r.candidates_per_s)
