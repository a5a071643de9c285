"""Rebuild the recall index beside the live one when the model's embeddings change, then swap.

A thread checks the model directory's embedding file every ``poll_ms``
(modification time and size). When they change it loads the artifacts, builds a
new index, and hands it to ``swap``; the batch being prepared keeps searching
the index it started with, so the worker never pauses for a rebuild (a 4M-item
inverted file takes a minute or more to build).

What it will not swap, and says so in the log, keeping the index in force:

* artifacts that cannot be read or are inconsistent (a training job halfway
  through writing them is retried at the next poll);
* a different item vocabulary: item indexes are the ranker's input contract,
  so a new vocabulary comes with a new ranker and a restarted worker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from inference.worker.artifacts import ModelArtifacts
from inference.worker.errors import ArtifactsError
from inference.worker.recall import EmbeddingIndex
from schemas.ranking import EMBEDDINGS_FILE

logger = logging.getLogger(__name__)

Stamp = tuple[int, int]  # the embedding file's (mtime_ns, size)


def file_stamp(path: Path) -> Stamp | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


class IndexReloader(threading.Thread):
    def __init__(
        self,
        model_dir: Path,
        current: ModelArtifacts,
        build: Callable[[ModelArtifacts], EmbeddingIndex],
        swap: Callable[[EmbeddingIndex], None],
        poll_ms: int,
    ) -> None:
        super().__init__(daemon=True, name="index-reload")
        self._model_dir = model_dir
        self._vocab_ids = current.vocab.item_ids
        self._build = build
        self._swap = swap
        self._poll_s = poll_ms / 1000
        self._stopping = threading.Event()
        self._stamp = file_stamp(model_dir / EMBEDDINGS_FILE)
        self.swaps = 0

    def run(self) -> None:
        while not self._stopping.wait(self._poll_s):
            self.check()

    def check(self) -> bool:
        """Rebuild and swap if the embeddings changed since the last check; True if swapped."""
        stamp = file_stamp(self._model_dir / EMBEDDINGS_FILE)
        if stamp is None or stamp == self._stamp:
            return False
        try:
            artifacts = ModelArtifacts.load(self._model_dir)
        except (ArtifactsError, OSError, ValueError) as error:
            logger.warning("new item embeddings not readable yet, index kept: %s", error)
            return False
        self._stamp = stamp
        if not np.array_equal(artifacts.vocab.item_ids, self._vocab_ids):
            logger.error(
                "the model directory has a new item vocabulary (%d items); the recall index "
                "is kept, restart the worker with the ranker that uses it",
                artifacts.vocab.num_items,
            )
            return False
        index = self._build(artifacts)
        self._swap(index)
        self.swaps += 1
        logger.info("recall index rebuilt from new embeddings and swapped in")
        return True

    def stop(self) -> None:
        self._stopping.set()
