"""Scorers of assembled inputs: the ranker on Triton (gRPC, asynchronous), in process, or none.

Each returns ``(scores [B, C], model version)``; :class:`RouteOrderScorer` is
recall without a ranker (the online evaluation's baseline). :class:`Breaker` keeps a failing
dependency out of the hot path for a while so that fallbacks stay within the
time budget, then lets one call probe it again: the worker recovers by itself.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import grpc  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt

from inference.worker.errors import (
    ArtifactsError,
    RankerTimeout,
    RankerUnavailable,
    VersionNotReady,
)
from schemas.model_files import ModelPathError, served_file_path
from schemas.ranking import (
    CAND_DENSE,
    CAND_ITEMS,
    CANDIDATE_FEATURES,
    INPUT_NAMES,
    MANIFEST_FILE,
    SCORES,
)

# A client deadline, or the model's queue dropping a request whose budget ran out.
_TIMED_OUT = re.compile(r"Deadline|timeout expired", re.IGNORECASE)
# Triton's answer to a request for a version it does not serve at that moment:
# "Request for unknown model: 'ranker_python' version 2 is not at ready state" while
# it loads or unloads, "... version 2 is not found" once it is gone.
_NOT_READY = re.compile(r"unknown model.* version \d+ is not (at ready state|found)")

Inputs = dict[str, npt.NDArray[np.generic]]
_TRITON_DTYPES: dict[np.dtype[np.generic], str] = {
    np.dtype(np.int32): "INT32",
    np.dtype(np.float32): "FP32",
}


class Scorer(Protocol):
    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        """``(scores, "<model>:<version that answered>")``; ``version``: ask for that one."""
        ...

    async def close(self) -> None: ...


class Breaker:
    """Skips a dependency after a failure, and lets one call a period find out if it is back.

    Closed, every call goes. A failure opens it: calls skip the dependency (the caller
    answers from its fallback) for ``retry_after_s``. Then one call goes as a trial, and
    every ``retry_after_s`` one more while no trial has reported: a success closes the
    breaker, a failure opens it for another period. So a stall of the dependency costs
    the calls in flight and at most one period of fallbacks, and an outage costs one
    trial call per period, never every call waiting for its timeout.
    """

    def __init__(self, retry_after_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._retry_after_s = retry_after_s
        self._clock = clock
        self._open_until = 0.0
        self._tripped = False

    @property
    def closed(self) -> bool:
        """No failure since the last success."""
        return not self._tripped

    def admits(self) -> bool:
        """Whether this call may go (a trial call counts as its period's one)."""
        if not self._tripped:
            return True
        now = self._clock()
        if now < self._open_until:
            return False
        self._open_until = now + self._retry_after_s
        return True

    def failed(self) -> None:
        self._tripped = True
        self._open_until = self._clock() + self._retry_after_s

    def succeeded(self) -> None:
        self._tripped = False
        self._open_until = 0.0

    def fresh(self) -> Breaker:
        """A closed breaker with the same delay and clock (for another dependency)."""
        return Breaker(self._retry_after_s, self._clock)


# gRPC waits 1 s, then up to 120 s, between reconnects to a server that went away:
# answers would stay on the fallback for minutes after Triton is back.
RECONNECT_BACKOFF_MS = {"initial": 250, "min": 250, "max": 2000}


def channel_args(grpcclient: Any) -> list[tuple[str, Any]]:
    """tritonclient's channel defaults (passing any replaces them all), reconnecting sooner."""
    keepalive = grpcclient.KeepAliveOptions()
    return [
        ("grpc.max_send_message_length", grpcclient.MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", grpcclient.MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", keepalive.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", keepalive.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", keepalive.keepalive_permit_without_calls),
        ("grpc.http2.max_pings_without_data", keepalive.http2_max_pings_without_data),
        *((f"grpc.{kind}_reconnect_backoff_ms", ms) for kind, ms in RECONNECT_BACKOFF_MS.items()),
    ]


class TritonScorer:
    """The served ranker over gRPC, at most ``max_inflight`` requests at a time."""

    def __init__(
        self, url: str, model: str, timeout_s: float, max_inflight: int, tls_ca: str = ""
    ) -> None:
        import tritonclient.grpc.aio as grpcclient  # type: ignore[import-untyped]

        self._grpc = grpcclient
        # With a CA, TLS that trusts only it (the file is read here, so a missing one fails
        # at start, not at the first request).
        self._client = grpcclient.InferenceServerClient(
            url,
            ssl=bool(tls_ca),
            root_certificates=tls_ca or None,
            channel_args=channel_args(grpcclient),
        )
        self._model = model
        self._timeout_s = timeout_s
        self._slots = asyncio.Semaphore(max_inflight)
        self.inflight = 0

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

        request = []
        for name in INPUT_NAMES:
            array = inputs[name]
            tensor = self._grpc.InferInput(name, list(array.shape), _TRITON_DTYPES[array.dtype])
            tensor.set_data_from_numpy(array)
            request.append(tensor)
        # The budget covers the wait for a free slot too: behind slow calls, a request
        # would otherwise wait for a slot and then for its own whole timeout.
        give_up = time.monotonic() + self._timeout_s
        try:
            await asyncio.wait_for(self._slots.acquire(), self._timeout_s)
        except TimeoutError:
            raise RankerTimeout(f"no Triton slot freed in {self._timeout_s} s") from None
        try:
            self.inflight += 1
            left = max(give_up - time.monotonic(), 0.001)
            result = await self._client.infer(
                self._model,
                request,
                model_version="" if version is None else str(version),
                outputs=[self._grpc.InferRequestedOutput(SCORES)],
                # The model's queue policy drops the request once this budget
                # is spent, instead of running work the worker gave up on.
                timeout=int(left * 1_000_000),
                client_timeout=left,
            )
        except InferenceServerException as exc:
            status = str(exc.status() or "")
            if "DEADLINE_EXCEEDED" in status or _TIMED_OUT.search(str(exc)):
                raise RankerTimeout(f"Triton gave no answer in {self._timeout_s} s") from exc
            if version is not None and _NOT_READY.search(str(exc)):
                raise VersionNotReady(f"Triton: {exc}") from exc
            raise RankerUnavailable(f"Triton: {exc}") from exc
        except (grpc.RpcError, OSError) as exc:  # the channel itself failing
            raise RankerUnavailable(f"Triton: {exc!r}") from exc
        # Anything else is a bug in this client (a wrong dtype, a bad shape): it
        # propagates, so it is never mistaken for an outage and papered over.
        finally:
            self.inflight -= 1
            self._slots.release()
        scores = result.as_numpy(SCORES)
        if scores is None:
            raise RankerUnavailable("Triton's answer has no scores")
        answered = result.get_response().model_version or "unknown"
        return scores.astype(np.float32, copy=False), f"{self._model}:{answered}"

    async def ready(self) -> bool:
        """Whether Triton has the model ready to serve (a default version), within budget."""
        try:
            ready: bool = await asyncio.wait_for(
                self._client.is_model_ready(self._model), self._timeout_s
            )
        except Exception:
            return False
        return ready

    async def close(self) -> None:
        await self._client.close()


class OnnxScorer:
    """The same ONNX model in this process (the end-to-end benchmark's ceiling)."""

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]

        manifest_path = model_dir / MANIFEST_FILE
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        try:
            served_path = served_file_path(model_dir, manifest)
        except ModelPathError as exc:
            raise ArtifactsError(f"{manifest_path} served_file: {exc}") from None
        served = str(served_path.relative_to(model_dir.resolve()))
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        # As in the served model: no spinning pool threads taking the worker's cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(served_path), options, providers=["CPUExecutionProvider"]
        )
        self._version = f"onnx:{served}:{manifest.get('created_at', 'unknown')}"
        self.inflight = 0

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        # One model in process: there is no other version to ask for.
        scores = await asyncio.to_thread(self.run, inputs)
        return scores, self._version

    def run(self, inputs: Inputs) -> npt.NDArray[np.float32]:
        """Scores [B, C], in the calling thread."""
        (scores,) = self._session.run([SCORES], {name: inputs[name] for name in INPUT_NAMES})
        return np.asarray(scores, dtype=np.float32)

    async def close(self) -> None:
        return None


ROUTE_ORDER_VERSION = "none:route-order"


class RouteOrderScorer:
    """No ranker: each candidate keeps its place in the recall merge (route priority first)."""

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        users, candidates = inputs[CAND_ITEMS].shape
        order = -np.arange(candidates, dtype=np.float32)
        return np.tile(order, (users, 1)), ROUTE_ORDER_VERSION

    async def close(self) -> None:
        return None


RECENT_FIRST_VERSION = "none:recent-first"
_RECENT_RANK = CANDIDATE_FEATURES.index("recent_rank")
_MERGE_POSITION = CANDIDATE_FEATURES.index("merge_position")


class RecentFirstScorer:
    """No ranker: the user's own items by recency first (the ``recent`` route's order), then
    the rest in recall merge order; read from the candidate features the worker computed."""

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        dense = np.asarray(inputs[CAND_DENSE], dtype=np.float32)
        recent, position = dense[..., _RECENT_RANK], dense[..., _MERGE_POSITION]
        own = 2.0 + recent  # 1 / (1 + rank) > 0: every own item above every other one
        scores = np.where(recent > 0, own, 1.0 - position).astype(np.float32)
        return scores, RECENT_FIRST_VERSION

    async def close(self) -> None:
        return None
