"""The ranker's input/output contract, shared by training, Triton and the worker.

One inference request scores the candidates of one or more users. Inputs are
shaped per user (the click sequence once, not copied per candidate); Triton's
batch dimension is the user. Ids are dense int32 indexes from a ``Vocabulary``:
0 pads, 1 is any id the model never saw.

| name          | dtype | shape (batch dim first) | meaning                                   |
| ------------- | ----- | ----------------------- | ----------------------------------------- |
| seq_items     | INT32 | [B, SEQ_LEN]            | recent clicks, oldest first, left-padded  |
| seq_cats      | INT32 | [B, SEQ_LEN]            | their categories                          |
| user_dense    | FP32  | [B, 4]                  | ``user_dense_vector`` of the user window  |
| cand_items    | INT32 | [B, C]                  | candidates to score                       |
| cand_cats     | INT32 | [B, C]                  | their categories                          |
| cand_dense    | FP32  | [B, C, F]               | ``CANDIDATE_FEATURES`` of each candidate  |
| scores        | FP32  | [B, C] (output)         | click probability                         |
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

# The model directory's file names live in schemas.model_files (stdlib only); the
# roles that read them import them from here as before.
from schemas.model_files import CATEGORIES_FILE as CATEGORIES_FILE
from schemas.model_files import EMBEDDINGS_FILE as EMBEDDINGS_FILE
from schemas.model_files import MANIFEST_FILE as MANIFEST_FILE
from schemas.model_files import MODEL_CONFIG_FILE as MODEL_CONFIG_FILE
from schemas.model_files import NETWORK_FILE as NETWORK_FILE
from schemas.model_files import POPULAR_FILE as POPULAR_FILE
from schemas.model_files import VOCAB_FILE as VOCAB_FILE
from schemas.model_files import WEIGHTS_FILE as WEIGHTS_FILE
from schemas.views import ITEM_TRENDS, USER_CLICK_WINDOW, ViewSpec
from schemas.windows import SEQUENCE_LIMIT

# The model's sequence input is as long as the sequences the feature job keeps.
SEQ_LEN = SEQUENCE_LIMIT
PAD_INDEX = 0
OOV_INDEX = 1
FIRST_ID_INDEX = 2


SEQ_ITEMS = "seq_items"
SEQ_CATS = "seq_cats"
USER_DENSE = "user_dense"
CAND_ITEMS = "cand_items"
CAND_CATS = "cand_cats"
CAND_DENSE = "cand_dense"
SCORES = "scores"
INPUT_NAMES = (SEQ_ITEMS, SEQ_CATS, USER_DENSE, CAND_ITEMS, CAND_CATS, CAND_DENSE)

# Counts of the user's current 30-minute window (Feast view user_click_window).
USER_DENSE_FEATURES = ("pv_count", "cart_count", "fav_count", "buy_count")
# Counts and conversion of the item's latest window (Feast view item_trends).
ITEM_DENSE_FEATURES = ("pv", "cart", "fav", "buy", "conversion")
# What the request's own state says of each candidate (schemas.candidates computes them,
# for the worker and for training alike). They carry to items and users the model never
# saw, which ids cannot: most of a live stream's items are new since training.
CONTEXT_FEATURES = (
    "fresh_touches",  # log1p of the user's touches of the item in the fresh view
    "fresh_intent",  # log1p of those that were a cart or a favourite
    "fresh_recency",  # 1 / (1 + minutes since the last such touch), 0 without one
    "is_last_click",  # the item of the user's latest event
    "category_touches",  # log1p of the fresh view's events in the item's category
    "same_category_as_last",  # the category of the user's latest event
    "history_rank",  # 1 / (1 + position in the user's history, most recent first)
    "history_recency",  # 1 / (1 + hours since the user last touched it), 0 never
    "history_touches",  # log1p of the user's touches in the history
    "covisit_score",  # log1p of its co-visitation count with the user's last clicks
    "covisit_rank",  # 1 / (1 + position) in each route's own list, 0 when absent
    "recent_rank",
    "embedding_rank",
    "trend_rank",
    "popular_rank",
    "from_request",  # the caller proposed it
    "merge_position",  # position in the recall merge / the candidate limit
    "user_fresh_length",  # log1p of the fresh view's length
    "user_history_size",  # log1p of the history's length
)
CANDIDATE_FEATURES = ITEM_DENSE_FEATURES + CONTEXT_FEATURES


def _dense_inputs_exist(view: ViewSpec, names: Sequence[str]) -> None:
    # A renamed or dropped feature must fail here, at import, not as zeros at serving.
    missing = sorted(set(names) - set(view.feature_names))
    if missing:
        raise LookupError(f"ranker dense inputs {missing} are not features of view {view.name}")


_dense_inputs_exist(USER_CLICK_WINDOW, USER_DENSE_FEATURES)
_dense_inputs_exist(ITEM_TRENDS, ITEM_DENSE_FEATURES)

Int32Array = npt.NDArray[np.int32]
Float32Array = npt.NDArray[np.float32]


def user_dense_vector(pv: int, cart: int, fav: int, buy: int) -> list[float]:
    """log1p of the window counts: heavy users must not dominate the scale."""
    return [math.log1p(pv), math.log1p(cart), math.log1p(fav), math.log1p(buy)]


def item_dense_vector(pv: int, cart: int, fav: int, buy: int, conversion: float) -> list[float]:
    return [math.log1p(pv), math.log1p(cart), math.log1p(fav), math.log1p(buy), conversion]


ZERO_USER_DENSE = user_dense_vector(0, 0, 0, 0)
ZERO_ITEM_DENSE = item_dense_vector(0, 0, 0, 0, 0.0)


@dataclass(frozen=True)
class Vocabulary:
    """Raw item/category ids → model indexes; saved beside the model as ``vocab.npz``."""

    item_ids: npt.NDArray[np.int64]  # sorted raw ids; index = position + FIRST_ID_INDEX
    category_ids: npt.NDArray[np.int64]

    @classmethod
    def build(cls, item_ids: Iterable[int], category_ids: Iterable[int]) -> Vocabulary:
        return cls(
            np.unique(np.fromiter(item_ids, dtype=np.int64)),
            np.unique(np.fromiter(category_ids, dtype=np.int64)),
        )

    @property
    def num_items(self) -> int:
        """Size of the item embedding table (pad and OOV included)."""
        return len(self.item_ids) + FIRST_ID_INDEX

    @property
    def num_categories(self) -> int:
        return len(self.category_ids) + FIRST_ID_INDEX

    def item_index(self, raw_ids: Sequence[int] | npt.NDArray[np.int64]) -> Int32Array:
        return _lookup(self.item_ids, raw_ids)

    def category_index(self, raw_ids: Sequence[int] | npt.NDArray[np.int64]) -> Int32Array:
        return _lookup(self.category_ids, raw_ids)

    def save(self, path: Path) -> None:
        with path.open("wb") as handle:
            np.savez(handle, item_ids=self.item_ids, category_ids=self.category_ids)

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        with np.load(path) as data:
            return cls(data["item_ids"].astype(np.int64), data["category_ids"].astype(np.int64))


def _lookup(
    known: npt.NDArray[np.int64], raw_ids: Sequence[int] | npt.NDArray[np.int64]
) -> Int32Array:
    raw = np.asarray(raw_ids, dtype=np.int64)
    if known.size == 0:
        return np.full(raw.shape, OOV_INDEX, dtype=np.int32)
    pos = np.searchsorted(known, raw)
    clipped = np.minimum(pos, known.size - 1)
    found = known[clipped] == raw
    return np.where(found, clipped + FIRST_ID_INDEX, OOV_INDEX).astype(np.int32)


def left_pad(indexes: Sequence[int] | Int32Array, length: int = SEQ_LEN) -> Int32Array:
    """The last ``length`` indexes, oldest first, padded with PAD_INDEX on the left."""
    tail = np.asarray(indexes, dtype=np.int32)[-length:] if length else np.zeros(0, np.int32)
    out = np.full(length, PAD_INDEX, dtype=np.int32)
    if tail.size:
        out[length - tail.size :] = tail
    return out
