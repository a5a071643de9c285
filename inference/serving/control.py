"""Explicit model control over Triton's HTTP API: load versions, probe them, swap, roll back.

A swap from version A to B never leaves a moment without a ready version:

1. load the model with a config override whose version policy serves A and B
   (Triton keeps A serving while B loads; the call returns once B is loaded);
2. check B is ready and scores a probe request addressed to version B;
3. load again serving only B: Triton unloads A after its in-flight requests.

Unversioned requests go to the newest ready version, so traffic moves to B at
step 1 when B > A (rollout) and at step 3 when B < A (rollback). If the probe
fails, the model is reloaded serving A alone and the error is raised. The policy
that ends up served is also written to config.pbtxt, so a restart serves the same.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inference.serving import probe, repository
from inference.serving.errors import RolloutError, ServingError
from inference.serving.settings import CONTROL_KEY_HEADER

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionState:
    """One row of Triton's repository index."""

    model: str
    version: int
    state: str
    reason: str


class TritonControl:
    """A thin client for Triton's repository, readiness and inference HTTP endpoints."""

    def __init__(
        self,
        http_url: str,
        timeout_s: float = 120.0,
        control_key: str = "",
        tls_ca: str = "",
    ) -> None:
        """``control_key``: the key a secured Triton wants for model control (and HTTP
        inference); ``tls_ca``: the CA to trust when ``http_url`` is https://."""
        self.base = http_url.rstrip("/")
        self.timeout_s = timeout_s
        self._control_key = control_key
        # No proxy: an http_proxy in the environment must not swallow loopback calls.
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if tls_ca:
            context = ssl.create_default_context(cafile=tls_ca)
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self._opener = urllib.request.build_opener(*handlers)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self._control_key:
            # Sent on every call: the probe's inference is restricted too on a secured server.
            request.add_header(CONTROL_KEY_HEADER, self._control_key)
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            raise ServingError(f"Triton {method} {path}: HTTP {error.code}: {detail}") from None
        except OSError as error:
            raise ServingError(
                f"Triton at {self.base} unreachable ({method} {path}): {error}"
            ) from None
        return json.loads(raw) if raw.strip() else None

    def index(self) -> list[VersionState]:
        rows = self._call("POST", "/v2/repository/index", {}) or []
        return [
            VersionState(r["name"], int(r["version"]), r.get("state", ""), r.get("reason", ""))
            for r in rows
            if r.get("version", "").isdigit()
        ]

    def ready_versions(self, model: str) -> list[int]:
        return sorted(r.version for r in self.index() if r.model == model and r.state == "READY")

    def load(self, model: str, config: Any | None = None) -> None:
        """Load (or reload) `model`; with `config`, that config replaces config.pbtxt's."""
        body: dict[str, Any] = {}
        if config is not None:
            body = {"parameters": {"config": repository.config_json(config)}}
        self._call("POST", f"/v2/repository/models/{model}/load", body)

    def unload(self, model: str) -> None:
        """Unload every version of ``model`` (its requests fail until it is loaded again)."""
        self._call("POST", f"/v2/repository/models/{model}/unload", {})

    def wait_ready(self, model: str, versions: Sequence[int], timeout_s: float = 60.0) -> None:
        """Until Triton reports every one of ``versions`` ready (RolloutError after
        ``timeout_s``): no routing may name a version before that."""
        deadline = time.monotonic() + timeout_s
        while not all(self.is_ready(model, v) for v in versions):
            if time.monotonic() > deadline:
                raise RolloutError(f"{model} versions {list(versions)} not ready in {timeout_s} s")
            time.sleep(0.1)

    def is_ready(self, model: str, version: int | None = None) -> bool:
        path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/ready"
        try:
            self._call("GET", path)
        except ServingError:
            return False
        return True

    def infer(
        self, model: str, inputs: dict[str, np.ndarray[Any, Any]], version: int | None = None
    ) -> tuple[int, np.ndarray[Any, Any]]:
        """(the version that answered, scores) for one request through the JSON API."""
        path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
        body = {"inputs": [probe.json_input(name, array) for name, array in inputs.items()]}
        answer = self._call("POST", path, body)
        output = answer["outputs"][0]
        scores = np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
        return int(answer["model_version"]), scores


def swap(
    control: TritonControl,
    model_dir: Path,
    target: int,
    before_unload: Callable[[int], None] = lambda _version: None,
) -> list[int]:
    """Serve `target` alone with no gap (see the module doc); returns the versions before.

    ``before_unload(target)`` runs once the target is probed and before the others are
    unloaded: the moment to move workers that ask for a version by name (the routing key).
    """
    model = model_dir.name
    if target not in repository.versions(model_dir):
        raise RolloutError(f"{model} has no version {target} in {model_dir}")
    before = control.ready_versions(model)
    config = repository.read_config(model_dir)
    log.info("%s: serving %s, loading %d beside them", model, before or "nothing", target)
    try:
        control.load(model, repository.with_versions(config, sorted({*before, target})))
        check_version(control, model, target, repository.read_limits(model_dir / str(target)))
    except ServingError as error:
        if before:
            control.load(model, repository.with_versions(config, before))
        raise RolloutError(
            f"{model} version {target} failed; still serving {before}: {error}"
        ) from error
    before_unload(target)
    control.load(model, repository.with_versions(config, [target]))
    repository.pin_versions(model_dir, [target])
    log.info("%s: now serving version %d only", model, target)
    return before


def check_version(
    control: TritonControl, model: str, version: int, limits: tuple[int, int]
) -> None:
    """Ready, and a probe request addressed to `version` gets plausible scores from it."""
    if not control.is_ready(model, version):
        raise RolloutError(f"{model} version {version} is not ready after loading")
    inputs = probe.probe_inputs(*limits)
    answered, scores = control.infer(model, inputs, version)
    problem = probe.check_scores(scores, inputs)
    if answered != version or problem:
        raise RolloutError(f"probe of {model} version {version}: {problem or answered}")


def rollout(
    control: TritonControl,
    model_dir: Path,
    target: int | None = None,
    before_unload: Callable[[int], None] = lambda _version: None,
) -> int:
    """Swap to `target` (default: the newest published version); returns it."""
    published = repository.versions(model_dir)
    if not published:
        raise RolloutError(f"nothing published in {model_dir}; run `publish` first")
    chosen = published[-1] if target is None else target
    swap(control, model_dir, chosen, before_unload)
    return chosen


def rollback(
    control: TritonControl,
    model_dir: Path,
    before_unload: Callable[[int], None] = lambda _version: None,
) -> int:
    """Swap to the newest published version older than the one served; returns it."""
    served = control.ready_versions(model_dir.name)
    if not served:
        raise RolloutError(f"{model_dir.name} is not loaded; nothing to roll back from")
    older = [v for v in repository.versions(model_dir) if v < max(served)]
    if not older:
        raise RolloutError(f"{model_dir.name} serves {max(served)}; no older version to go to")
    swap(control, model_dir, older[-1], before_unload)
    return older[-1]


def describe(control: TritonControl, model_dir: Path) -> dict[str, Any]:
    """What `status` prints for one model: on disk, pinned, and Triton's view."""
    model = model_dir.name
    try:
        loaded: Sequence[VersionState] = [r for r in control.index() if r.model == model]
        reachable = True
    except ServingError:
        loaded, reachable = [], False
    return {
        "model": model,
        "published": repository.versions(model_dir),
        "pinned": repository.pinned_versions(model_dir) if model_dir.exists() else None,
        "triton_reachable": reachable,
        "triton": {
            str(r.version): r.state + (f" ({r.reason})" if r.reason else "") for r in loaded
        },
    }
