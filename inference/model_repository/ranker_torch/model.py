"""Triton python-backend model: the DIN ranker in PyTorch, bf16 on a GPU, fp32 on CPU.

`python -m inference.serving publish` fills each version folder with this file,
the shared request handling (../request_handling.py), and from the artifacts
directory the weights (model.pt), hyper-parameters (model_config.json) and the
network's source (network.py, torch-only: Triton's stub cannot import the
project). A version so keeps the network it was trained as.

Tensors cross the stub through DLPack only (the stub's numpy path returns zeros
under numpy 2, see ranker_python/model.py). Requests are checked and grouped as
in ranker_python; a group's concatenated inputs go to the instance's device in
one copy per input and are scored in one forward pass; scores come back fp32.

Where it runs follows Triton's instance kind (config.pbtxt): a GPU instance runs
bf16 on its GPU, a CPU instance fp32 on the CPU. With `compile` on (the default
"auto" compiles on GPUs only), the users and candidates dimensions are padded up
to a few bucket sizes (padding rows and PAD candidates are scored, then sliced
off), and every bucket shape is compiled and run once in initialize(), so no
request waits for a compilation. Shapes beyond the largest bucket run eagerly.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

try:
    import triton_python_backend_utils as pb_utils  # type: ignore[import-not-found]
except ImportError:  # imported outside Triton: unit tests use the functions below
    pb_utils = None


def _load_request_handling() -> Any:
    """request_handling.py from this file's folder (publish puts it there)."""
    import importlib.util

    path = Path(__file__).resolve().parent / "request_handling.py"
    spec = importlib.util.spec_from_file_location("request_handling", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is missing: republish with `python -m inference.serving`")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


handling = _load_request_handling()

COMPILE_CHOICES = ("auto", "on", "off")
# The worker asks 100 candidates per user by default: one bucket above it, one for
# larger recalls. Each bucket multiplies the shapes compiled at load.
DEFAULT_CANDIDATE_BUCKETS = (128, 256)
PAD_INDEX = 0  # schemas.ranking.PAD_INDEX: scored as an empty slot, then sliced off


class Options(NamedTuple):
    """The model's config.pbtxt parameters, parsed."""

    intra_op_threads: int  # torch.set_num_threads; 0 leaves torch's default (one per core)
    inter_op_threads: int
    compile: str  # one of COMPILE_CHOICES
    compile_mode: str  # torch.compile's mode; "default" is its own default
    user_buckets: tuple[int, ...]
    candidate_buckets: tuple[int, ...]


def power_of_two_buckets(limit: int) -> tuple[int, ...]:
    """1, 2, 4, ... below `limit`, then `limit` itself."""
    sizes = list(itertools.takewhile(lambda size: size < limit, (2**i for i in range(63))))
    return (*sizes, limit)


def _sizes(text: str, name: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise ValueError(f"parameter {name}={text!r}: expected sizes like '1,2,4'") from None
    if not sizes or sizes[0] < 1:
        raise ValueError(f"parameter {name}={text!r}: expected positive sizes")
    return sizes


def parse_options(model_config: Mapping[str, Any]) -> Options:
    """Options from Triton's model config (the JSON form `initialize` receives)."""
    raw = {k: v.get("string_value", "") for k, v in model_config.get("parameters", {}).items()}
    max_batch = max(1, int(model_config.get("max_batch_size", 0)))
    compile_choice = raw.get("compile", "auto") or "auto"
    if compile_choice not in COMPILE_CHOICES:
        raise ValueError(f"parameter compile={compile_choice!r}: one of {COMPILE_CHOICES}")
    threads = {}
    for name in ("intra_op_threads", "inter_op_threads"):
        text = raw.get(name, "1") or "1"
        if not text.isdigit() or (name == "inter_op_threads" and int(text) < 1):
            raise ValueError(f"parameter {name}={text!r}: expected a thread count")
        threads[name] = int(text)
    users = raw.get("user_buckets", "")
    candidates = raw.get("candidate_buckets", "")
    return Options(
        intra_op_threads=threads["intra_op_threads"],
        inter_op_threads=threads["inter_op_threads"],
        compile=compile_choice,
        compile_mode=raw.get("compile_mode", "default") or "default",
        user_buckets=_sizes(users, "user_buckets") if users else power_of_two_buckets(max_batch),
        candidate_buckets=(
            _sizes(candidates, "candidate_buckets") if candidates else DEFAULT_CANDIDATE_BUCKETS
        ),
    )


def bucket_for(size: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket that holds `size`; None beyond the largest."""
    return next((bucket for bucket in sorted(buckets) if bucket >= size), None)


def compiles(choice: str, device_type: str) -> bool:
    """ "auto" compiles on CUDA only: on CPU compilation costs more than it saves here."""
    return choice == "on" or (choice == "auto" and device_type == "cuda")


def pad(batch: dict[str, Any], users: int, candidates: int) -> dict[str, Any]:
    """`batch` (torch tensors, [B, ...]) grown to `users` rows and `candidates` candidates.

    New rows and candidates are zeros: PAD ids (an all-PAD sequence attends to
    nothing) and zero dense values. Their scores are sliced off by the caller.
    """
    from torch.nn.functional import pad as pad_tensor

    rows, columns = batch["cand_items"].shape
    more_rows, more_columns = users - rows, candidates - columns
    if more_rows == 0 and more_columns == 0:
        return batch
    out = {}
    for name, tensor in batch.items():
        if name.startswith("cand"):
            # pad lists (before, after) pairs from the last dimension backwards.
            widths = (0, 0, 0, more_columns) if tensor.ndim == 3 else (0, more_columns)
        else:
            widths = (0, 0)
        out[name] = pad_tensor(tensor, (*widths, 0, more_rows), value=PAD_INDEX)
    return out


def load_network(version_dir: Path) -> Any:
    """network.py of this version, as a module (registered under a name of its own)."""
    name = f"ranker_torch_network_{abs(hash(str(version_dir.resolve())))}"
    return handling.load_module(version_dir / "network.py", name)


class Scorer:
    """The DIN of one version on one device: eager, or compiled per bucket shape."""

    def __init__(self, version_dir: Path, device: Any, options: Options) -> None:
        import torch

        network = load_network(version_dir)
        config = network.DINConfig.load(version_dir / "model_config.json")
        model = network.DIN(config)
        weights = torch.load(version_dir / "model.pt", map_location="cpu", weights_only=True)
        model.load_state_dict(weights)
        self.device = device
        self.dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        self.model = model.to(device, self.dtype).eval()
        self.limits: tuple[int, int] = (config.num_items, config.num_categories)
        self.buckets: tuple[tuple[int, ...], tuple[int, ...]] | None = None
        self.forward: Any = self.model
        if compiles(options.compile, device.type):
            self.buckets = (options.user_buckets, options.candidate_buckets)
            self.forward = _compile(self.model, options, len(self.shapes()))

    def shapes(self) -> list[tuple[int, int]]:
        """(users, candidates) of every compiled shape; [] when eager."""
        return list(itertools.product(*self.buckets)) if self.buckets else []

    def warm_up(self) -> None:
        """Run (so compile) every bucket shape, or one small batch when eager."""
        for users, candidates in self.shapes() or [(1, 1)]:
            empty = {
                name: np.zeros(shape, np.float32 if name.endswith("dense") else np.int32)
                for name, shape in handling.expected_shapes(users, candidates).items()
            }
            self.run(empty)

    def run(self, inputs: Mapping[str, np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
        """Scores [users, candidates], fp32, for one concatenated group of requests."""
        import torch

        users, candidates = inputs["cand_items"].shape
        batch = {}
        for name in handling.INPUT_NAMES:
            tensor = torch.from_numpy(inputs[name]).to(self.device, non_blocking=True)
            batch[name] = tensor.to(self.dtype) if name.endswith("dense") else tensor
        forward = self.model
        if self.buckets:
            rows = bucket_for(users, self.buckets[0])
            columns = bucket_for(candidates, self.buckets[1])
            if rows is not None and columns is not None:
                batch, forward = pad(batch, rows, columns), self.forward
        with torch.inference_mode():
            scores = forward(*(batch[name] for name in handling.INPUT_NAMES))
        result: np.ndarray[Any, Any] = scores[:users, :candidates].float().cpu().numpy()
        return result


def _compile(model: Any, options: Options, shapes: int) -> Any:
    import torch

    # Every bucket is its own static shape: let dynamo keep one graph per shape.
    dynamo_config: Any = torch._dynamo.config
    for limit in ("recompile_limit", "cache_size_limit"):
        if hasattr(dynamo_config, limit):
            setattr(dynamo_config, limit, max(getattr(dynamo_config, limit), shapes + 1))
    # Inductor compiles kernels in worker processes started with sys.executable; inside
    # Triton's stub that may not be a Python interpreter, so compile in process then.
    if not Path(sys.executable).name.startswith("python"):
        torch._inductor.config.compile_threads = 1
    mode = None if options.compile_mode == "default" else options.compile_mode
    return torch.compile(model, mode=mode, dynamic=False)


def apply_thread_caps(options: Options) -> tuple[int, int]:
    """Cap this process's CPU thread pools; returns (intra-op, inter-op) as torch reports.

    Each instance is a stub process of its own; left at torch's default, every one
    starts a pool the size of the machine, and several instances oversubscribe the
    cores (measured on an H200 host: served throughput fell to 4% of the model's).
    """
    import torch

    if options.intra_op_threads:
        torch.set_num_threads(options.intra_op_threads)
    # Only possible before the pool starts: a reload in the same process keeps the first.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(options.inter_op_threads)
    return torch.get_num_threads(), torch.get_num_interop_threads()


def instance_device(args: Mapping[str, str]) -> Any:
    """The torch device of this instance: its GPU for KIND_GPU, else the CPU."""
    import torch

    if args.get("model_instance_kind") != "GPU":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("a GPU instance, but torch sees no CUDA device")
    device = torch.device(f"cuda:{int(args.get('model_instance_device_id', '0'))}")
    torch.cuda.set_device(device)
    return device


class TritonPythonModel:
    """The class name and methods Triton's python backend looks for."""

    def initialize(self, args: dict[str, str]) -> None:
        options = parse_options(json.loads(args["model_config"]))
        intra, inter = apply_thread_caps(options)  # first: before torch starts any pool
        version_dir = Path(args["model_repository"]) / args["model_version"]
        self.scorer = Scorer(version_dir, instance_device(args), options)
        self.scorer.warm_up()
        shapes = len(self.scorer.shapes())
        pb_utils.Logger.log_info(
            f"{args['model_instance_name']}: {self.scorer.device} {self.scorer.dtype}, "
            f"intra-op threads {intra}, inter-op threads {inter}, "
            + (f"compiled and warmed {shapes} shapes" if shapes else "eager")
        )

    def execute(self, requests: list[Any]) -> list[Any]:
        from torch.utils.dlpack import from_dlpack

        inputs = [
            {
                name: from_dlpack(tensor).numpy()  # a view: checks read it in place
                for name in handling.INPUT_NAMES
                if (tensor := pb_utils.get_input_tensor_by_name(request, name)) is not None
            }
            for request in requests
        ]
        outcomes = handling.answer(inputs, self.scorer.limits, self.scorer.run)
        answers: list[Any] = handling.responses(outcomes, pb_utils)
        return answers

    def finalize(self) -> None:
        del self.scorer
