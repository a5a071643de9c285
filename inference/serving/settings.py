"""Where the model repository is and how to reach Triton, read once from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from inference.serving.errors import ServingError

# The committed layout: config.pbtxt per model and the python backend's model.py.
TEMPLATE_REPOSITORY = Path(__file__).resolve().parents[1] / "model_repository"
MODELS = ("ranker", "ranker_python")


@dataclass(frozen=True)
class ServingSettings:
    """The repository Triton serves, its HTTP endpoint, and the model the commands act on."""

    repository: Path
    http_url: str = "http://127.0.0.1:8000"
    model: str = "ranker_python"
    artifacts_dir: Path = Path(".cache/ranker")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> ServingSettings:
        env = os.environ if environ is None else environ
        base = Path.cwd() if cwd is None else cwd
        home = Path(env.get("STREAMREC_STACK_HOME") or base / ".stack")
        repository = env.get("STREAMREC_TRITON_MODEL_REPOSITORY") or str(home / "models")
        port = env.get("STREAMREC_TRITON_HTTP_PORT", "").strip() or "8000"
        if not port.isdigit():
            raise ServingError(f"STREAMREC_TRITON_HTTP_PORT={port!r} is not a port number")
        # The local binary serves only the python backend, so that is the default here.
        model = env.get("STREAMREC_TRITON_MODEL") or "ranker_python"
        if model not in MODELS:
            raise ServingError(f"STREAMREC_TRITON_MODEL={model!r}; known: {', '.join(MODELS)}")
        return cls(
            repository=(base / repository).resolve(),
            http_url=env.get("STREAMREC_TRITON_HTTP_URL") or f"http://127.0.0.1:{port}",
            model=model,
            artifacts_dir=(base / (env.get("STREAMREC_MODEL_DIR") or ".cache/ranker")).resolve(),
        )
