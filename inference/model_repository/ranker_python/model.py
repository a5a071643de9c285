"""Triton python-backend model: the ranker's ONNX file run by ONNX Runtime.

This file is the one source; `python -m inference.serving publish` copies it into
every version folder, with the shared request handling (../request_handling.py)
beside it, so a version keeps the code it was published with and a rollback
brings back both. It imports nothing from the project: Triton's stub runs it from
the version folder.

Tensors cross the stub through DLPack only. The stub in the nvidia-pytriton wheel
was built against numpy 1, and with numpy 2 installed ``as_numpy()`` and
``pb_utils.Tensor(name, ndarray)`` silently return zeros; ``np.from_dlpack`` and
``pb_utils.Tensor.from_dlpack`` are exact.

Each request is checked on its own (a bad one gets its own error response, the
rest are scored); valid requests with the same candidate count are concatenated
and scored in one ONNX Runtime run (request_handling.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def onnx_runner(session: Any) -> Any:
    """One concatenated group of requests → scores [users, candidates]."""
    return lambda inputs: session.run([handling.OUTPUT_NAME], inputs)[0]


def read_limits(version_dir: Path) -> tuple[int, int]:
    """(num_items, num_categories) from the model_config.json published beside the model."""
    config = json.loads((version_dir / "model_config.json").read_text())
    return int(config["num_items"]), int(config["num_categories"])


class TritonPythonModel:
    """The class name and methods Triton's python backend looks for."""

    def initialize(self, args: dict[str, str]) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]

        version_dir = Path(args["model_repository"]) / args["model_version"]
        self.limits = read_limits(version_dir)
        parameters = json.loads(args["model_config"]).get("parameters", {})
        threads = int(parameters.get("intra_op_threads", {}).get("string_value", "0"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0 = one per core
        # Idle pool threads spin by default; on a small CPU shared with the callers that
        # spinning takes the cores the next request needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(version_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.run = onnx_runner(session)

    def execute(self, requests: list[Any]) -> list[Any]:
        inputs = [
            {
                name: np.from_dlpack(tensor)
                for name in handling.INPUT_NAMES
                if (tensor := pb_utils.get_input_tensor_by_name(request, name)) is not None
            }
            for request in requests
        ]
        answers: list[Any] = handling.responses(
            handling.answer(inputs, self.limits, self.run), pb_utils
        )
        return answers

    def finalize(self) -> None:
        self.run = None
