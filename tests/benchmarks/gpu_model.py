"""The GPU serving benchmark's model: its artifacts, its FLOPs, and the raw reference timing.

Needs only the standard library, numpy and torch (the GPU host has no more): the
network comes from `jobs/ranker/network.py` (torch-only), or from the trained
artifacts' own copy.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
NETWORK_SOURCE = REPO_ROOT / "jobs" / "ranker" / "network.py"
TORCH_FILES = ("model.pt", "model_config.json", "network.py")
SEQ_LEN = 50
INPUT_NAMES = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")
# torch.compile's default mode, then the autotuning one (minutes of tuning, behind a flag).
COMPILE_MODES = {"compile": None, "max-autotune": "max-autotune-no-cudagraphs"}


def load_network(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_benchmark_network", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def write_artifacts(directory: Path, args: argparse.Namespace) -> tuple[Any, str]:
    """(the fp32 model on CPU, where it came from), its artifacts written into `directory`.

    The trained model if STREAMREC_MODEL_DIR holds model.pt, model_config.json and
    network.py, else a random DIN of the size the flags give.
    """
    import torch

    trained = Path(os.environ.get("STREAMREC_MODEL_DIR", REPO_ROOT / ".cache/ranker"))
    directory.mkdir(parents=True, exist_ok=True)
    if all((trained / name).exists() for name in TORCH_FILES):
        for name in TORCH_FILES:
            shutil.copyfile(trained / name, directory / name)
        network = load_network(directory / "network.py")
        model = network.DIN(network.DINConfig.load(directory / "model_config.json"))
        model.load_state_dict(torch.load(directory / "model.pt", map_location="cpu"))
        source = f"trained model in {trained}"
    else:
        network = load_network(NETWORK_SOURCE)
        torch.manual_seed(0)
        # The attention over ids is the GPU's work; the features-only default is a head.
        config = network.DINConfig(
            num_items=args.num_items,
            num_categories=args.num_categories,
            dim=args.dim,
            id_inputs=True,
        )
        model = network.DIN(config)
        torch.save(model.state_dict(), directory / "model.pt")
        config.save(directory / "model_config.json")
        shutil.copyfile(NETWORK_SOURCE, directory / "network.py")
        source = f"random DIN, {args.num_items:,} items, dim {args.dim}"
    (directory / "manifest.json").write_text(json.dumps({"source": source}) + "\n")
    return model.eval(), source


def flops_per_candidate(config: Any, candidates: int, seq_len: int = SEQ_LEN) -> float:
    """Multiply-adds x 2 of the model's matmuls per candidate (elementwise work left out).

    Per candidate: its query projection, the pair products and hidden layers over
    the sequence (the bulk), the attention-weighted sum of the sequence and the
    head MLP; per user, shared by its candidates: the keys' projection.
    """
    width = 2 * config.dim
    if not config.id_inputs:  # the head over the features alone
        head = [config.user_dense_size + config.item_dense_size, *config.final_hidden, 1]
        return float(2.0 * sum(a * b for a, b in itertools.pairwise(head)))
    hidden = list(config.attention_hidden)
    head_in = 3 * width + config.user_dense_size + config.item_dense_size
    head = [head_in, *config.final_hidden, 1]
    per_candidate = (
        width * hidden[0]  # query projection
        + seq_len * hidden[0] * width  # pair products, Wp (q * k)
        + seq_len * sum(a * b for a, b in zip(hidden, [*hidden[1:], 1], strict=True))
        + seq_len * width  # attention-weighted sum of the keys
        + sum(a * b for a, b in itertools.pairwise(head))
    )
    per_user = seq_len * width * hidden[0]  # key projection
    return float(2.0 * (per_candidate + per_user / candidates))


def make_inputs(
    users: int, candidates: int, num_items: int, num_categories: int, seed: int
) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    seq = rng.integers(2, num_items, (users, SEQ_LEN), dtype=np.int32)
    seq[:, : SEQ_LEN // 4] = 0
    return {
        "seq_items": seq,
        "seq_cats": rng.integers(2, num_categories, (users, SEQ_LEN), dtype=np.int32),
        "user_dense": rng.random((users, 4), dtype=np.float32),
        "cand_items": rng.integers(2, num_items, (users, candidates), dtype=np.int32),
        "cand_cats": rng.integers(2, num_categories, (users, candidates), dtype=np.int32),
        "cand_dense": rng.random((users, candidates, 24), dtype=np.float32),
    }


def raw_reference(
    model: Any,
    users_list: Sequence[int],
    candidates: int,
    seconds: float,
    device_name: str,
    variants: Sequence[str],
) -> dict[str, dict[str, float]]:
    """Candidates/s of the bare model per variant and users per call, inputs on the device.

    bf16 on CUDA, fp32 on CPU. "eager" is the module as is; "compile" and
    "max-autotune" are torch.compile modes, compiled per shape before timing.
    """
    import torch

    device = torch.device(device_name)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    on_device = copy.deepcopy(model).to(device, dtype).eval()
    torch._dynamo.config.cache_size_limit = max(64, len(users_list) + 1)
    config = model.config
    results: dict[str, dict[str, float]] = {}
    for variant in variants:
        torch._dynamo.reset()
        forward = on_device
        if variant != "eager":
            forward = torch.compile(on_device, mode=COMPILE_MODES[variant], dynamic=False)
        results[variant] = {}
        for users in users_list:
            host = make_inputs(users, candidates, config.num_items, config.num_categories, users)
            batch = [torch.from_numpy(host[n]).to(device) for n in INPUT_NAMES]
            batch[2], batch[5] = batch[2].to(dtype), batch[5].to(dtype)
            rate = _time_calls(torch, forward, batch, seconds) * users * candidates
            results[variant][str(users)] = rate
            print(f"raw {variant} {dtype}: {users} users x {candidates} cands: {rate:,.0f} cands/s")
    return results


def _time_calls(torch: Any, forward: Any, batch: list[Any], seconds: float) -> float:
    """Calls per second, after the calls that compile and warm up."""
    with torch.inference_mode():
        for _ in range(5):
            forward(*batch)
        _sync(torch)
        calls, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            for _ in range(10):
                forward(*batch)
            _sync(torch)
            calls += 10
        return calls / (time.perf_counter() - started)


def _sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
