from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt

from inference.worker.artifacts import ModelArtifacts
from inference.worker.index_reload import IndexReloader
from inference.worker.recall import EmbeddingIndex
from schemas.ranking import EMBEDDINGS_FILE
from tests.support.artifacts import write_random_artifacts

ITEMS = {100 + n: 1 + n % 3 for n in range(30)}


def build(artifacts: ModelArtifacts) -> EmbeddingIndex:
    return EmbeddingIndex(artifacts.item_embeddings, artifacts.vocab.item_ids)


def rewrite_embeddings(model_dir: Path, embeddings: npt.NDArray[np.float32]) -> None:
    np.save(model_dir / EMBEDDINGS_FILE, embeddings)
    # Same-size rewrites within one clock tick must still be seen as new.
    stat = (model_dir / EMBEDDINGS_FILE).stat()
    os.utime(model_dir / EMBEDDINGS_FILE, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def reloader_for(
    model_dir: Path, artifacts: ModelArtifacts
) -> tuple[IndexReloader, list[EmbeddingIndex]]:
    swapped: list[EmbeddingIndex] = []
    return IndexReloader(model_dir, artifacts, build, swapped.append, poll_ms=10), swapped


def test_new_embeddings_are_built_beside_and_swapped_in(tmp_path: Path) -> None:
    artifacts = write_random_artifacts(tmp_path, ITEMS, popular=[100])
    reloader, swapped = reloader_for(tmp_path, artifacts)
    assert not reloader.check()  # unchanged files: nothing rebuilt
    # The new model points every item at item 129's old direction.
    new = artifacts.item_embeddings.copy()
    target = artifacts.vocab.item_index([129])[0]
    new[2:] = new[target] * np.arange(1, len(new) - 1)[:, None]
    rewrite_embeddings(tmp_path, new)
    assert reloader.check()
    assert len(swapped) == 1
    clicks = [artifacts.vocab.item_index([100])]
    # The item with the largest scale along that direction is the last one, 129.
    assert swapped[0].search(clicks, k=1) == [[129]]
    assert not reloader.check()  # swapped once per change


def test_a_new_vocabulary_or_unreadable_files_keep_the_index_in_force(tmp_path: Path) -> None:
    artifacts = write_random_artifacts(tmp_path, ITEMS, popular=[100])
    reloader, swapped = reloader_for(tmp_path, artifacts)
    (tmp_path / EMBEDDINGS_FILE).write_bytes(b"half-written")
    assert not reloader.check()
    write_random_artifacts(tmp_path, {**ITEMS, 999: 1}, popular=[100], seed=1)
    assert not reloader.check()
    assert swapped == []


def test_searches_go_on_against_the_old_index_while_the_new_one_builds(tmp_path: Path) -> None:
    artifacts = write_random_artifacts(tmp_path, ITEMS, popular=[100])
    live = build(artifacts)
    building, release = threading.Event(), threading.Event()

    def slow_build(new: ModelArtifacts) -> EmbeddingIndex:
        building.set()
        assert release.wait(10)
        return build(new)

    swapped: list[EmbeddingIndex] = []
    reloader = IndexReloader(tmp_path, artifacts, slow_build, swapped.append, poll_ms=10)
    rewrite_embeddings(tmp_path, artifacts.item_embeddings * 2)
    reloader.start()
    try:
        assert building.wait(10)
        clicks = [artifacts.vocab.item_index([100])]
        # The worker's searches are not held up by the rebuild in progress.
        for _ in range(50):
            assert live.search(clicks, k=3)[0]
        assert swapped == []
        release.set()
        for _ in range(500):
            if swapped:
                break
            threading.Event().wait(0.01)
        assert len(swapped) == 1
    finally:
        release.set()
        reloader.stop()
