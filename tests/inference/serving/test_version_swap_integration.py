"""Rollout and rollback under load: no request fails, and answers come from the right version."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

from inference.serving import cli, control, repository
from inference.serving.errors import RolloutError
from inference.serving.probe import probe_inputs
from tests.conftest import TritonServer
from tests.inference.serving.artifacts import SMALL_CATEGORIES, SMALL_ITEMS, write_serving_artifacts
from tests.inference.serving.client import infer

pytestmark = pytest.mark.integration


class Hammer:
    """Client threads sending unversioned requests until stopped; records every outcome."""

    def __init__(self, triton: TritonServer, inputs: dict[str, np.ndarray[Any, Any]]) -> None:
        self.triton, self.inputs = triton, inputs
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.answers: list[tuple[str, np.ndarray[Any, Any]]] = []
        # Each thread's versions in order: within one thread requests are sequential.
        self.per_thread: list[list[str]] = [[] for _ in range(3)]
        self.threads = [threading.Thread(target=self._run, args=(v,)) for v in self.per_thread]

    def _run(self, versions: list[str]) -> None:
        with grpcclient.InferenceServerClient(self.triton.grpc_url) as client:
            while not self.stop.is_set():
                try:
                    scores, version = infer(client, self.triton.model, self.inputs)
                except Exception as error:  # every failure counts, whatever its type
                    self.errors.append(repr(error))
                else:
                    self.answers.append((version, scores))
                    versions.append(version)

    def __enter__(self) -> Hammer:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def wait_for(self, count: int, timeout_s: float = 60.0) -> None:
        """Until ``count`` answers arrived; fails loudly, with the errors seen, if not."""
        deadline = time.monotonic() + timeout_s
        while len(self.answers) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{len(self.answers)} of {count} answers within {timeout_s} s; "
                    f"errors: {self.errors[-3:]}"
                )
            time.sleep(0.05)


def test_rollout_and_rollback_under_load_lose_nothing(
    triton: TritonServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = triton.repository / triton.model
    triton_control = control.TritonControl(triton.http_url)
    old = triton_control.ready_versions(triton.model)[-1]
    new_artifacts = write_serving_artifacts(tmp_path / "v-new", seed=11)
    new = repository.publish(new_artifacts, triton.repository)
    inputs = probe_inputs(SMALL_ITEMS, SMALL_CATEGORIES, users=2, candidates=20)
    expected = {
        str(old): _onnx_scores(model_dir / str(old), inputs),
        str(new): _onnx_scores(new_artifacts, inputs),
    }
    args = ["--repository", str(triton.repository), "--url", triton.http_url]
    with Hammer(triton, inputs) as hammer:
        hammer.wait_for(20)
        assert cli.main([*args, "rollout", "--model", triton.model]) == 0
        hammer.wait_for(len(hammer.answers) + 20)
        assert triton_control.ready_versions(triton.model) == [new]
        assert cli.main([*args, "rollback", "--model", triton.model]) == 0
        hammer.wait_for(len(hammer.answers) + 20)
    assert hammer.errors == []
    # Old, then new, then old again: traffic moved twice and each answer is its version's.
    assert [_runs(versions) for versions in hammer.per_thread] == [
        [str(old), str(new), str(old)]
    ] * 3
    for version, scores in hammer.answers:
        np.testing.assert_allclose(scores, expected[version], atol=1e-5, rtol=0)
    assert triton_control.ready_versions(triton.model) == [old]
    assert repository.pinned_versions(model_dir) == [old]
    assert f"rolled back to version {old}" in capsys.readouterr().out


def test_a_broken_version_is_not_served(triton: TritonServer, tmp_path: Path) -> None:
    triton_control = control.TritonControl(triton.http_url)
    before = triton_control.ready_versions(triton.model)
    broken = write_serving_artifacts(tmp_path / "broken", seed=3)
    (broken / "model.onnx").write_bytes(b"not an onnx file")
    version = repository.publish(broken, triton.repository)
    try:
        with pytest.raises(RolloutError, match=f"version {version} failed"):
            control.rollout(triton_control, triton.repository / triton.model, version)
        assert triton_control.ready_versions(triton.model) == before
    finally:
        # The session's repository is shared: leave no broken version for a later rollback.
        for model_dir in triton.repository.iterdir():
            shutil.rmtree(model_dir / str(version), ignore_errors=True)


def _onnx_scores(folder: Path, inputs: dict[str, np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    (scores,) = session.run(["scores"], inputs)
    return np.asarray(scores)


def _runs(values: list[str]) -> list[str]:
    """Consecutive duplicates collapsed: ["1","1","2","1"] -> ["1","2","1"]."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]
