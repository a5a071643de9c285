"""Replayed requests as padded model inputs: one row per request, its whole candidate list.

Attribute names follow ``schemas.ranking`` (the contract's inputs), so the training
loop, the ONNX checks and the variant comparison read these rows as they are.
Candidates are right-padded with ``PAD_INDEX`` to the longest list; ``mask`` says
which are real.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jobs.ranker.store_replay import ReplayedRequest
from jobs.ranker.windows import F32
from schemas.ranking import CANDIDATE_FEATURES, PAD_INDEX, SEQ_LEN, USER_DENSE_FEATURES, left_pad

I32 = npt.NDArray[np.int32]


@dataclass(frozen=True)
class ListRows:
    seq_items: I32  # [N, SEQ_LEN]
    seq_cats: I32
    user_dense: F32  # [N, 4]
    cand_items: I32  # [N, C]
    cand_cats: I32
    cand_dense: F32  # [N, C, F]
    labels: F32  # [N, C]: 1 where the user touched the candidate next
    mask: npt.NDArray[np.bool_]  # [N, C]: a real candidate, not padding

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, rows: npt.NDArray[np.intp]) -> ListRows:
        return ListRows(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))


def list_rows(requests: Sequence[ReplayedRequest], width: int = 0) -> ListRows:
    """Padded rows of ``requests``; ``width`` candidates at least (0: the longest list)."""
    n = len(requests)
    c = max([width, *(len(r.candidates) for r in requests)]) or 1
    cand_items = np.full((n, c), PAD_INDEX, dtype=np.int32)
    cand_cats = np.full((n, c), PAD_INDEX, dtype=np.int32)
    cand_dense = np.zeros((n, c, len(CANDIDATE_FEATURES)), dtype=np.float32)
    labels = np.zeros((n, c), dtype=np.float32)
    mask = np.zeros((n, c), dtype=bool)
    for row, request in enumerate(requests):
        given = request.model_input
        size = len(given.cand_items)
        cand_items[row, :size] = given.cand_items
        cand_cats[row, :size] = given.cand_cats
        cand_dense[row, :size] = given.cand_dense
        labels[row, :size] = [c.item_id in request.truth for c in request.candidates]
        mask[row, :size] = True
    return ListRows(
        seq_items=np.stack([left_pad(r.model_input.seq_items) for r in requests])
        if n
        else np.zeros((0, SEQ_LEN), np.int32),
        seq_cats=np.stack([left_pad(r.model_input.seq_cats) for r in requests])
        if n
        else np.zeros((0, SEQ_LEN), np.int32),
        user_dense=np.asarray(
            [r.model_input.user_dense for r in requests], dtype=np.float32
        ).reshape(n, len(USER_DENSE_FEATURES)),
        cand_items=cand_items,
        cand_cats=cand_cats,
        cand_dense=cand_dense,
        labels=labels,
        mask=mask,
    )
