"""ranker_torch's pure parts on CPU: its options, buckets and padding, and its scores."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

from inference.serving import repository
from inference.serving.probe import probe_inputs
from inference.serving.settings import TEMPLATE_REPOSITORY
from jobs.ranker.artifacts import load_model
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS, load_published_model

# bf16 keeps 8 bits of mantissa; through the attention and the head a click
# probability moves by a few thousandths (0.0021 here for the small random model,
# 0.002 on an H200 for the reference one). A wrong cast or a dropped mask moves it
# by far more.
BF16_TOLERANCE = 0.01


@pytest.fixture(scope="module")
def version_dir(published: Path) -> Path:
    return published / "ranker_torch" / "1"


@pytest.fixture(scope="module")
def model_py(version_dir: Path) -> ModuleType:
    return load_published_model(version_dir, "ranker_torch_model")


@pytest.fixture(scope="module")
def fp32_din(version_dir: Path) -> Any:
    """The same weights through jobs.ranker's DIN, in process."""
    return load_model(version_dir)


def _config(**parameters: str) -> dict[str, Any]:
    return {
        "max_batch_size": 64,
        "parameters": {k: {"string_value": v} for k, v in parameters.items()},
    }


def _inputs(users: int, candidates: int, seed: int) -> dict[str, np.ndarray[Any, Any]]:
    inputs = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users, candidates)
    rng = np.random.default_rng(seed)
    for name in ("cand_items", "seq_items"):
        inputs[name] = rng.permutation(inputs[name].ravel()).reshape(inputs[name].shape)
    return inputs


def _torch_scores(model: Any, inputs: dict[str, np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    with torch.inference_mode():
        scores = model(*(torch.from_numpy(inputs[name]) for name in inputs))
    return np.asarray(scores.float().numpy())


def test_the_committed_config_parses_to_the_documented_defaults(model_py: ModuleType) -> None:
    config = repository.read_config(TEMPLATE_REPOSITORY / "ranker_torch")
    options = model_py.parse_options(json.loads(repository.config_json(config)))
    assert (options.intra_op_threads, options.inter_op_threads) == (1, 1)
    assert (options.compile, options.compile_mode) == ("auto", "default")
    assert options.user_buckets == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert options.candidate_buckets == (128, 256)


def test_options_override_and_refuse_nonsense(model_py: ModuleType) -> None:
    options = model_py.parse_options(
        _config(intra_op_threads="4", compile="off", user_buckets="48, 8", candidate_buckets="200")
    )
    assert (options.intra_op_threads, options.compile) == (4, "off")
    assert (options.user_buckets, options.candidate_buckets) == ((8, 48), (200,))
    assert model_py.parse_options(_config()).user_buckets == (1, 2, 4, 8, 16, 32, 64)
    for bad in ({"compile": "yes"}, {"intra_op_threads": "-1"}, {"inter_op_threads": "0"},
                {"user_buckets": "a,b"}, {"candidate_buckets": "0"}):  # fmt: skip
        with pytest.raises(ValueError, match=next(iter(bad))):
            model_py.parse_options(_config(**bad))


def test_buckets(model_py: ModuleType) -> None:
    assert model_py.power_of_two_buckets(1) == (1,)
    assert model_py.power_of_two_buckets(100) == (1, 2, 4, 8, 16, 32, 64, 100)
    assert [model_py.bucket_for(n, (1, 2, 4, 8)) for n in (1, 3, 4, 8, 9)] == [1, 4, 4, 8, None]
    assert model_py.compiles("auto", "cuda") and not model_py.compiles("auto", "cpu")
    assert model_py.compiles("on", "cpu") and not model_py.compiles("off", "cuda")


def test_padding_adds_pad_rows_and_candidates(model_py: ModuleType) -> None:
    batch = {k: torch.from_numpy(v) for k, v in _inputs(3, 5, seed=1).items()}
    padded = model_py.pad(batch, 4, 8)
    assert {k: tuple(v.shape) for k, v in padded.items()} == {
        "seq_items": (4, 50), "seq_cats": (4, 50), "user_dense": (4, 4),
        "cand_items": (4, 8), "cand_cats": (4, 8), "cand_dense": (4, 8, 24),
    }  # fmt: skip
    assert padded["cand_items"][:3, 5:].eq(0).all() and padded["seq_items"][3].eq(0).all()
    assert torch.equal(padded["cand_dense"][:3, :5], batch["cand_dense"])
    assert model_py.pad(batch, 3, 5) is batch


def test_cpu_scores_equal_the_in_process_din(
    model_py: ModuleType, version_dir: Path, fp32_din: Any
) -> None:
    options = model_py.parse_options(_config())
    scorer = model_py.Scorer(version_dir, torch.device("cpu"), options)
    assert (scorer.dtype, scorer.shapes()) == (torch.float32, [])  # eager fp32 on CPU
    scorer.warm_up()
    for users, candidates in ((1, 1), (3, 200), (8, 7)):
        inputs = _inputs(users, candidates, seed=users + candidates)
        scores = scorer.run(inputs)
        assert scores.dtype == np.float32 and scores.shape == (users, candidates)
        np.testing.assert_allclose(scores, _torch_scores(fp32_din, inputs), atol=1e-6, rtol=0)


def test_padded_shapes_score_like_exact_ones(
    model_py: ModuleType, version_dir: Path, fp32_din: Any
) -> None:
    scorer = model_py.Scorer(version_dir, torch.device("cpu"), model_py.parse_options(_config()))
    # The compiled path's padding, run eagerly: what a GPU instance does minus the compiler.
    scorer.buckets = ((1, 4, 16), (8, 64))
    for users, candidates in ((3, 5), (16, 64), (2, 100)):  # (2, 100): beyond the buckets
        inputs = _inputs(users, candidates, seed=7 * users + candidates)
        np.testing.assert_allclose(
            scorer.run(inputs), _torch_scores(fp32_din, inputs), atol=1e-6, rtol=0
        )


def test_bf16_scores_stay_near_fp32(fp32_din: Any) -> None:
    bf16 = copy.deepcopy(fp32_din).to(torch.bfloat16)
    inputs = _inputs(16, 200, seed=3)
    as_bf16 = {
        k: torch.from_numpy(v).to(torch.bfloat16) if k.endswith("dense") else torch.from_numpy(v)
        for k, v in inputs.items()
    }
    with torch.inference_mode():
        low = bf16(*as_bf16.values()).float().numpy()
    difference = np.abs(low - _torch_scores(fp32_din, inputs))
    assert difference.max() < BF16_TOLERANCE, difference.max()
