"""Triton python-backend model for the GPU benchmark: the DIN in torch bf16 on CUDA.

`tests/benchmarks/gpu_serving.py run` copies this file into a version folder as
model.py, beside `model.pt` (state dict) and `model_config.json`. The repository
root (for `jobs.ranker.model`) comes as the `repo_root` config parameter, since
the stub ignores PYTHONPATH.

Tensors cross the stub by DLPack only (numpy 2 breaks the stub's numpy path): CPU
inputs become torch tensors without a copy, requests with the same candidate count
are concatenated, moved to the instance's GPU in one copy each, scored in one
forward pass, and the fp32 scores come back through DLPack. No id checks here:
this file measures the serving path; inference/model_repository/ranker_python
is the checked model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

try:
    import triton_python_backend_utils as pb_utils  # type: ignore[import-not-found]
except ImportError:  # imported outside Triton (type checks)
    pb_utils = None

INPUT_NAMES = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        import torch

        config = json.loads(args["model_config"])
        sys.path.insert(0, config["parameters"]["repo_root"]["string_value"])
        from jobs.ranker.model import DIN, DINConfig

        version_dir = Path(args["model_repository"]) / args["model_version"]
        device_id = int(args.get("model_instance_device_id", "0"))
        self.device = torch.device(f"cuda:{device_id}" if torch.cuda.is_available() else "cpu")
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        model = DIN(DINConfig.load(version_dir / "model_config.json"))
        model.load_state_dict(torch.load(version_dir / "model.pt", map_location="cpu"))
        self.model = model.to(self.device, self.dtype).eval()
        self.torch = torch

    def execute(self, requests: list[Any]) -> list[Any]:
        torch = self.torch
        inputs = [
            {n: torch.from_dlpack(pb_utils.get_input_tensor_by_name(r, n)) for n in INPUT_NAMES}
            for r in requests
        ]
        groups: dict[int, list[int]] = {}
        for position, tensors in enumerate(inputs):
            groups.setdefault(int(tensors["cand_items"].shape[1]), []).append(position)
        outputs: list[Any] = [None] * len(requests)
        with torch.inference_mode():
            for positions in groups.values():
                batch = {
                    n: torch.cat([inputs[p][n] for p in positions]).to(
                        self.device, non_blocking=True
                    )
                    for n in INPUT_NAMES
                }
                for name in ("user_dense", "cand_dense"):
                    batch[name] = batch[name].to(self.dtype)
                scores = self.model(*(batch[n] for n in INPUT_NAMES)).float().cpu()
                sizes = [inputs[p]["cand_items"].shape[0] for p in positions]
                for position, block in zip(positions, scores.split(sizes), strict=True):
                    outputs[position] = block.contiguous()
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor.from_dlpack("scores", scores)])
            for scores in outputs
        ]
