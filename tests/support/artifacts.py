"""Random but complete worker artifacts for tests and benchmarks (no training needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from inference.worker.artifacts import ModelArtifacts
from schemas.ranking import (
    CATEGORIES_FILE,
    EMBEDDINGS_FILE,
    POPULAR_FILE,
    VOCAB_FILE,
    Vocabulary,
)


def write_random_artifacts(
    model_dir: Path,
    item_categories: dict[int, int],
    popular: list[int],
    dim: int = 16,
    seed: int = 0,
) -> ModelArtifacts:
    """A small, random but complete set of worker artifacts (tests and benchmarks).

    ``item_categories`` maps raw item ids to raw category ids. Items of one
    category get nearby embeddings, so nearest neighbours stay in the category.
    """
    rng = np.random.default_rng(seed)
    vocab = Vocabulary.build(item_categories, item_categories.values())
    categories = np.zeros(vocab.num_items, dtype=np.int64)
    indexes = vocab.item_index(list(item_categories))
    categories[indexes] = list(item_categories.values())
    centres = {c: rng.normal(size=dim) for c in set(item_categories.values())}
    embeddings = rng.normal(scale=0.3, size=(vocab.num_items, dim)).astype(np.float32)
    for index, category in zip(indexes, item_categories.values(), strict=True):
        embeddings[index] += centres[category]
    model_dir.mkdir(parents=True, exist_ok=True)
    vocab.save(model_dir / VOCAB_FILE)
    np.save(model_dir / EMBEDDINGS_FILE, embeddings)
    np.save(model_dir / CATEGORIES_FILE, categories)
    (model_dir / POPULAR_FILE).write_text(json.dumps(popular))
    return ModelArtifacts.load(model_dir)
