"""Each candidate's ``cand_dense`` row: one function for the worker and for training (pure).

The worker builds a :class:`RequestState` from what it read from the online store
for one request; training builds the same from its replay of the store over the
training period (``jobs.ranker.store_replay``). Both call :func:`candidate_features`,
so the model is trained on exactly the numbers it is served (a test feeds one
request through both paths and compares the tensors).

The features are ``schemas.ranking.CANDIDATE_FEATURES``, in that order: the item's
window counts, then what this request's state says of the candidate (the user's
touches of it, of its category, its history, the routes that proposed it and
where). Every value is bounded and defined for items and users never seen in
training; an item's absence from a route or a history reads as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from schemas.ranking import CANDIDATE_FEATURES, ITEM_DENSE_FEATURES, Vocabulary
from schemas.records import Route

F32 = npt.NDArray[np.float32]
# Behaviours that say more than a view: the user meant to come back.
INTENT_BEHAVIORS = frozenset({"cart", "fav"})
# The routes whose positions are features, in CONTEXT_FEATURES' order.
RANKED_ROUTES: tuple[Route, ...] = ("covisit", "recent", "embedding", "trend", "popular")
_MINUTE_MS = 60_000
_HOUR_MS = 3_600_000


@dataclass(frozen=True)
class HistoryTouch:
    """One item of a user's history: when it was last touched and how often."""

    item_id: int
    last_ts: int
    count: int


@dataclass(frozen=True)
class RequestState:
    """What one request knows when its candidates are scored.

    ``items``/``categories``/``behaviors``/``event_ts`` are the fresh view's events,
    oldest first (the trigger folded in when the worker folds it); ``history`` is
    most recent first; ``routes`` are each recall route's own list, best first.
    """

    now_ms: int
    items: Sequence[int] = ()
    categories: Sequence[int] = ()
    behaviors: Sequence[str] = ()
    event_ts: Sequence[int] = ()
    history: Sequence[HistoryTouch] = ()
    routes: Mapping[Route, Sequence[int]] = field(default_factory=dict)
    covisit_scores: Mapping[int, float] = field(default_factory=dict)
    candidate_limit: int = 100


def _positions(items: Sequence[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for position, item in enumerate(items):
        out.setdefault(item, position)
    return out


def _inverse_rank(positions: Mapping[int, int], item: int) -> float:
    position = positions.get(item)
    return 0.0 if position is None else 1.0 / (1.0 + position)


def candidate_features(
    state: RequestState,
    candidates: Sequence[int],
    categories: Sequence[int],
    item_dense: F32,
) -> F32:
    """``[C, len(CANDIDATE_FEATURES)]`` for ``candidates`` (raw ids, merge order), their raw
    categories (0 unknown) and their ``item_dense_vector`` rows ``[C, 5]``."""
    count = len(candidates)
    out = np.zeros((count, len(CANDIDATE_FEATURES)), dtype=np.float32)
    if count == 0:
        return out
    out[:, : len(ITEM_DENSE_FEATURES)] = item_dense
    touches: dict[int, int] = {}
    intent: dict[int, int] = {}
    last_touch: dict[int, int] = {}
    category_touches: dict[int, int] = {}
    for item, category, behavior, ts in zip(
        state.items, state.categories, state.behaviors, state.event_ts, strict=False
    ):
        touches[item] = touches.get(item, 0) + 1
        if behavior in INTENT_BEHAVIORS:
            intent[item] = intent.get(item, 0) + 1
        last_touch[item] = max(ts, last_touch.get(item, ts))
        if category:
            category_touches[category] = category_touches.get(category, 0) + 1
    last_item = state.items[-1] if state.items else None
    last_category = state.categories[-1] if state.categories else 0
    history = {touch.item_id: (rank, touch) for rank, touch in enumerate(state.history)}
    route_positions = [_positions(state.routes.get(route, ())) for route in RANKED_ROUTES]
    requested = set(state.routes.get("request", ()))
    limit = max(state.candidate_limit, 1)
    fresh_length = math.log1p(len(state.items))
    history_size = math.log1p(len(state.history))
    now = state.now_ms
    context = len(ITEM_DENSE_FEATURES)
    rows = []
    for row, (item, category) in enumerate(zip(candidates, categories, strict=True)):
        seen_at = last_touch.get(item)
        in_history = history.get(item)
        values = [
            math.log1p(touches.get(item, 0)),
            math.log1p(intent.get(item, 0)),
            0.0 if seen_at is None else 1.0 / (1.0 + max(now - seen_at, 0) / _MINUTE_MS),
            1.0 if item == last_item else 0.0,
            math.log1p(category_touches.get(category, 0)) if category else 0.0,
            1.0 if category and category == last_category else 0.0,
            0.0 if in_history is None else 1.0 / (1.0 + in_history[0]),
            0.0
            if in_history is None
            else 1.0 / (1.0 + max(now - in_history[1].last_ts, 0) / _HOUR_MS),
            0.0 if in_history is None else math.log1p(in_history[1].count),
            math.log1p(max(state.covisit_scores.get(item, 0.0), 0.0)),
            *(_inverse_rank(positions, item) for positions in route_positions),
            1.0 if item in requested else 0.0,
            row / limit,
            fresh_length,
            history_size,
        ]
        rows.append(values)
    # One conversion for the whole list: row by row it cost more than the values.
    out[:, context:] = np.asarray(rows, dtype=np.float64)
    return out


@dataclass(frozen=True)
class CandidateInput:
    """One request's part of a ranker call, as model indexes (unpadded), and the raw
    category each candidate was given."""

    seq_items: npt.NDArray[np.int32]  # [<= SEQ_LEN] oldest first
    seq_cats: npt.NDArray[np.int32]
    user_dense: F32  # [4]
    cand_items: npt.NDArray[np.int32]  # [C]
    cand_cats: npt.NDArray[np.int32]
    cand_dense: F32  # [C, len(CANDIDATE_FEATURES)]
    categories: list[int]


def candidate_input(
    state: RequestState,
    candidates: Sequence[int],
    known_categories: npt.NDArray[np.int64],
    row_categories: Sequence[int],
    item_dense: F32,
    user_dense: Sequence[float],
    vocab: Vocabulary,
) -> CandidateInput:
    """What the worker sends the ranker for one request, and training trains on (pure).

    A candidate's category is the model's own (``known_categories``, by item index),
    else ``row_categories`` (the item's trends row online, its latest event in a
    replay), 0 when neither knows it.
    """
    cand_items = vocab.item_index(list(candidates))
    table = known_categories[cand_items]
    categories = [
        int(known) if known else int(fallback)
        for known, fallback in zip(table, row_categories, strict=True)
    ]
    return CandidateInput(
        seq_items=vocab.item_index(list(state.items)),
        seq_cats=vocab.category_index(list(state.categories)),
        user_dense=np.asarray(user_dense, dtype=np.float32),
        cand_items=cand_items,
        cand_cats=vocab.category_index(categories),
        cand_dense=candidate_features(state, candidates, categories, item_dense),
        categories=categories,
    )
