"""The newly trained model against another one (the champion) on the same held-out rows.

Each model indexes items and categories through its own vocabulary, so the rows
(sequences and candidates, built in the new model's index space) are carried
through the raw ids into the other model's: an id it never saw becomes its OOV
index, as it would be when serving. Dense inputs do not depend on a vocabulary.
The same candidates, sequences and labels, scored by each model's served ONNX file:
the AUCs compare like for like.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from jobs.ranker.errors import TrainingDataError
from jobs.ranker.lighten import list_auc, onnx_scores, session
from jobs.ranker.list_rows import ListRows
from schemas.model_files import MANIFEST_FILE, ModelPathError, served_file_path
from schemas.ranking import FIRST_ID_INDEX, VOCAB_FILE, Vocabulary

I32 = npt.NDArray[np.int32]


def carried(indexes: I32, source: npt.NDArray[np.int64], target: npt.NDArray[np.int64]) -> I32:
    """Indexes over ``source``'s sorted raw ids, as indexes over ``target``'s.

    Padding and OOV keep their indexes; a raw id ``target`` lacks becomes OOV.
    """
    out = indexes.copy()
    known = indexes >= FIRST_ID_INDEX
    raw = source[indexes[known] - FIRST_ID_INDEX]
    # The vocabulary's lookup over any sorted raw ids (items or categories alike).
    out[known] = Vocabulary(target, np.zeros(0, np.int64)).item_index(raw)
    return out


def reindexed(samples: ListRows, source: Vocabulary, target: Vocabulary) -> ListRows:
    """``samples`` (in ``source``'s index space) in ``target``'s."""
    items, cats = (source.item_ids, target.item_ids), (source.category_ids, target.category_ids)
    return replace(
        samples,
        seq_items=carried(samples.seq_items, *items),
        cand_items=carried(samples.cand_items, *items),
        seq_cats=carried(samples.seq_cats, *cats),
        cand_cats=carried(samples.cand_cats, *cats),
    )


def against(
    model_dir: Path, samples: ListRows, vocabulary: Vocabulary, threads: int = 2
) -> dict[str, Any]:
    """The model in ``model_dir`` (its served file) evaluated on ``samples``."""
    try:
        manifest = json.loads((model_dir / MANIFEST_FILE).read_text())
        served = served_file_path(model_dir, manifest)
        theirs = Vocabulary.load(model_dir / VOCAB_FILE)
    except (OSError, ValueError, KeyError, ModelPathError) as error:
        raise TrainingDataError(f"baseline model {model_dir}: {error}") from None
    rows = reindexed(samples, vocabulary, theirs)
    scores = onnx_scores(session(served, threads), rows)
    return {"model_dir": str(model_dir), "served_file": served.name, "auc": list_auc(scores, rows)}
