"""The ranker's input tensors for a group of users (pure), per ``schemas.ranking``.

Users of one request are padded to a common candidate count C (pad index 0,
zero dense features); :func:`split_scores` drops the padding again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from schemas.ranking import (
    CAND_CATS,
    CAND_DENSE,
    CAND_ITEMS,
    CANDIDATE_FEATURES,
    PAD_INDEX,
    SEQ_CATS,
    SEQ_ITEMS,
    SEQ_LEN,
    USER_DENSE,
    USER_DENSE_FEATURES,
    left_pad,
)


@dataclass(frozen=True)
class UserInput:
    """One user's part of a request, already as model indexes."""

    seq_items: npt.NDArray[np.int32]  # [<= SEQ_LEN] oldest first
    seq_cats: npt.NDArray[np.int32]
    user_dense: Sequence[float]  # [4]
    cand_items: npt.NDArray[np.int32]  # [c]
    cand_cats: npt.NDArray[np.int32]  # [c]
    cand_dense: npt.NDArray[np.float32]  # [c, len(CANDIDATE_FEATURES)]


def assemble(users: Sequence[UserInput]) -> dict[str, npt.NDArray[np.generic]]:
    """Stack ``users`` into one request; candidates right-padded to the longest list."""
    b = len(users)
    c = max((len(u.cand_items) for u in users), default=0) or 1
    cand_items = np.full((b, c), PAD_INDEX, dtype=np.int32)
    cand_cats = np.full((b, c), PAD_INDEX, dtype=np.int32)
    cand_dense = np.zeros((b, c, len(CANDIDATE_FEATURES)), dtype=np.float32)
    for row, user in enumerate(users):
        n = len(user.cand_items)
        cand_items[row, :n] = user.cand_items
        cand_cats[row, :n] = user.cand_cats
        cand_dense[row, :n] = user.cand_dense
    return {
        SEQ_ITEMS: np.stack([left_pad(u.seq_items, SEQ_LEN) for u in users]),
        SEQ_CATS: np.stack([left_pad(u.seq_cats, SEQ_LEN) for u in users]),
        USER_DENSE: np.asarray([u.user_dense for u in users], dtype=np.float32).reshape(
            b, len(USER_DENSE_FEATURES)
        ),
        CAND_ITEMS: cand_items,
        CAND_CATS: cand_cats,
        CAND_DENSE: cand_dense,
    }


def output_problem(scores: object, shape: tuple[int, ...]) -> str | None:
    """Why a ranker's output cannot be the scores of a request of ``shape`` (users,
    candidates), or None (pure). A model may be replaced by one that answers
    anything: a wrong shape or dtype must not reach the post-processing."""
    if not isinstance(scores, np.ndarray) or scores.dtype.kind != "f":
        kind = getattr(scores, "dtype", type(scores).__name__)
        return f"scores of type {kind}, not floating point"
    if scores.shape != shape:
        return f"scores of shape {list(scores.shape)} for a request of {list(shape)}"
    return None


def split_scores(scores: npt.NDArray[np.float32], counts: Sequence[int]) -> list[list[float]]:
    """Each user's scores without the padding."""
    return [scores[row, :n].astype(float).tolist() for row, n in enumerate(counts)]


def chunks(count: int, size: int) -> list[range]:
    """Index ranges of at most ``size`` covering ``range(count)``."""
    return [range(start, min(start + size, count)) for start in range(0, count, size)]
