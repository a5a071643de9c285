from __future__ import annotations

import numpy as np

from inference.worker.inputs import UserInput, assemble, chunks, split_scores
from schemas.ranking import (
    CAND_CATS,
    CAND_DENSE,
    CAND_ITEMS,
    SEQ_CATS,
    SEQ_ITEMS,
    SEQ_LEN,
    USER_DENSE,
)


def user(cands: list[int], seq: list[int]) -> UserInput:
    n = len(cands)
    return UserInput(
        seq_items=np.array(seq, np.int32),
        seq_cats=np.array(seq, np.int32) + 100,
        user_dense=[1.0, 2.0, 3.0, 4.0],
        cand_items=np.array(cands, np.int32),
        cand_cats=np.array(cands, np.int32) + 100,
        cand_dense=np.ones((n, 24), np.float32),
    )


def test_users_are_padded_to_a_common_candidate_count() -> None:
    inputs = assemble([user([5, 6, 7], [2, 3]), user([8], [])])
    assert inputs[CAND_ITEMS].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert inputs[CAND_ITEMS].dtype == np.int32
    assert inputs[CAND_CATS].tolist() == [[105, 106, 107], [108, 0, 0]]
    assert inputs[CAND_DENSE].shape == (2, 3, 24)
    assert inputs[CAND_DENSE][1, 1:].sum() == 0
    assert inputs[SEQ_ITEMS].shape == (2, SEQ_LEN)
    assert inputs[SEQ_ITEMS][0, -2:].tolist() == [2, 3]
    assert inputs[SEQ_ITEMS][1].sum() == 0
    assert inputs[SEQ_CATS][0, -1] == 103
    assert inputs[USER_DENSE].dtype == np.float32
    assert inputs[USER_DENSE].shape == (2, 4)


def test_split_scores_drops_padding() -> None:
    scores = np.array([[0.1, 0.2, 0.3], [0.4, 0.0, 0.0]], np.float32)
    split = split_scores(scores, [3, 1])
    assert [len(s) for s in split] == [3, 1]
    assert split[1][0] == np.float32(0.4)


def test_chunks_cover_every_index_once() -> None:
    assert [list(r) for r in chunks(5, 2)] == [[0, 1], [2, 3], [4]]
    assert chunks(0, 3) == []
