"""What the worker reads from the model directory, and a tiny set of them for tests.

The ranker's training job writes these files (see the project brief's artifacts
layout): the vocabulary, the item embedding table (row = item index) the Faiss
recall searches, each item's raw category, and the popular items used for cold
users and fallbacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from inference.worker.errors import ArtifactsError
from schemas.ranking import (
    CATEGORIES_FILE,
    EMBEDDINGS_FILE,
    FIRST_ID_INDEX,
    POPULAR_FILE,
    VOCAB_FILE,
    Vocabulary,
)

REQUIRED = (VOCAB_FILE, EMBEDDINGS_FILE, CATEGORIES_FILE, POPULAR_FILE)


@dataclass(frozen=True)
class ModelArtifacts:
    vocab: Vocabulary
    item_embeddings: npt.NDArray[np.float32]  # [num_items, dim]
    item_categories: npt.NDArray[np.int64]  # raw category id per item index, 0 = unknown
    popular_items: tuple[int, ...]  # raw item ids, most popular first

    @classmethod
    def load(cls, model_dir: Path) -> ModelArtifacts:
        missing = [name for name in REQUIRED if not (model_dir / name).is_file()]
        if missing:
            raise ArtifactsError(
                f"model directory {model_dir} lacks {missing}; train the ranker first "
                "(make train) or point STREAMREC_MODEL_DIR at its artifacts"
            )
        vocab = Vocabulary.load(model_dir / VOCAB_FILE)
        embeddings = np.ascontiguousarray(np.load(model_dir / EMBEDDINGS_FILE), dtype=np.float32)
        categories = np.load(model_dir / CATEGORIES_FILE).astype(np.int64)
        popular = tuple(int(i) for i in json.loads((model_dir / POPULAR_FILE).read_text()))
        if embeddings.shape[0] != vocab.num_items or categories.shape[0] != vocab.num_items:
            raise ArtifactsError(
                f"{model_dir}: {embeddings.shape[0]} embeddings and {categories.shape[0]} "
                f"categories for a vocabulary of {vocab.num_items} items"
            )
        return cls(vocab, embeddings, categories, popular)

    def category_of(self, item_indexes: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
        """Raw category ids of item indexes (0 for pad/OOV)."""
        found: npt.NDArray[np.int64] = self.item_categories[item_indexes]
        return found

    def raw_item_ids(self, item_indexes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Raw ids of item indexes >= FIRST_ID_INDEX."""
        found: npt.NDArray[np.int64] = self.vocab.item_ids[item_indexes - FIRST_ID_INDEX]
        return found
