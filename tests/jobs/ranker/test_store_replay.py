"""The store replay's requests, and the same request through the worker: equal tensors.

Two users, events within one five-minute slide (no window has closed, so no trend
row or item window exists yet, as in the store at that time). User 2 views 101
then 102; user 1 views 101, carts 102, views 103: the request after that last event.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from inference.worker.features import TIMESTAMP, Row
from inference.worker.metrics import WorkerMetrics
from inference.worker.prepare import BatchPreparer
from inference.worker.settings import WorkerSettings
from jobs.ranker.events import BEHAVIOR_CODES, Events
from jobs.ranker.list_rows import list_rows
from jobs.ranker.store_replay import EmbeddingSearch, ReplayedRequest, StoreReplay
from schemas.candidates import HistoryTouch
from schemas.ranking import CANDIDATE_FEATURES, PAD_INDEX, Vocabulary
from schemas.records import BehaviorEvent, RecRequest
from schemas.windows import SLIDE_MS
from tests.support.artifacts import write_random_artifacts

T0 = 1_700_000_000_000 // SLIDE_MS * SLIDE_MS
EVENTS = [  # user, item, category, behaviour, seconds after T0
    (2, 101, 1, "pv", 0),
    (2, 102, 1, "pv", 10),
    (1, 101, 1, "pv", 20),
    (1, 102, 1, "cart", 30),
    (1, 103, 2, "pv", 40),
]
CATEGORIES = {101: 1, 102: 1, 103: 2, 104: 2, 105: 3}


def _events() -> Events:
    columns = list(zip(*EVENTS, strict=True))
    return Events.from_columns(
        np.asarray(columns[0], np.int64),
        np.asarray(columns[1], np.int64),
        np.asarray(columns[2], np.int64),
        np.asarray([BEHAVIOR_CODES[b] for b in columns[3]], np.int8),
        T0 + 1000 * np.asarray(columns[4], np.int64),
    )


@pytest.fixture
def replayed(tmp_path: Path) -> tuple[ReplayedRequest, BatchPreparer]:
    artifacts = write_random_artifacts(tmp_path, CATEGORIES, popular=[105, 104])
    events = _events()
    search = EmbeddingSearch(artifacts.item_embeddings, artifacts.vocab, artifacts.item_categories)
    replay = StoreReplay(events, search, list(artifacts.popular_items))
    last = (events.user == 1) & (events.item == 103)
    [request] = list(replay.run(last))
    reader = StoreAsReplayed()
    worker = BatchPreparer(WorkerSettings(), artifacts, reader, WorkerMetrics())  # type: ignore[arg-type]
    return request, worker


class StoreAsReplayed:
    """What the online store holds after the five events (written out by hand)."""

    def users(self, ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        fresh: Row = {
            "item_ids": [101, 102, 103], "category_ids": [1, 1, 2],
            "behaviors": ["pv", "cart", "pv"],
            "event_ts": [T0 + 20_000, T0 + 30_000, T0 + 40_000], TIMESTAMP: T0 + 40_000,
        }  # fmt: skip
        return [fresh if i == 1 else None for i in ids], [None for _ in ids]

    def routes_and_histories(
        self, categories: Sequence[int], items: Sequence[int], per_item: int, users: Sequence[int]
    ) -> tuple[list[Row | None], list[list[tuple[int, float]]], list[list[HistoryTouch]]]:
        sets = {  # co-visits: user 2's pair, then user 1's three clicks
            101: [(102, 2.0), (103, 1.0)],
            102: [(101, 2.0), (103, 1.0)],
            103: [(102, 1.0), (101, 1.0)],
        }
        history = [
            HistoryTouch(103, T0 + 40_000, 1),
            HistoryTouch(102, T0 + 30_000, 1),
            HistoryTouch(101, T0 + 20_000, 1),
        ]
        return (
            [None for _ in categories],
            [sets.get(i, [])[:per_item] for i in items],
            [history if u == 1 else [] for u in users],
        )

    def items(
        self, ids: Sequence[int], stock_of: Sequence[int] | None = None
    ) -> tuple[list[Row | None], list[bool]]:
        return [None for _ in ids], [False for _ in (ids if stock_of is None else stock_of)]


def test_the_replayed_request_holds_what_the_store_held(
    replayed: tuple[ReplayedRequest, BatchPreparer],
) -> None:
    request, _ = replayed
    assert request.state.items == [101, 102, 103]
    assert request.state.behaviors == ["pv", "cart", "pv"]
    assert [(h.item_id, h.count) for h in request.state.history] == [(103, 1), (102, 1), (101, 1)]
    # 103's set, then 102's, then 101's, summed
    assert request.state.covisit_scores == {102: 3.0, 101: 3.0, 103: 2.0}
    assert request.state.routes["recent"] == [103, 102, 101]
    assert request.state.routes["trend"] == []  # no window has closed yet
    assert request.truth == frozenset() and request.next_item is None
    assert request.touched == {101, 102, 103}
    routes = {c.item_id: c.route for c in request.candidates}
    assert routes[102] == routes[101] == routes[103] == "covisit"  # before "recent"


def test_training_and_the_worker_build_the_same_ranker_inputs(
    replayed: tuple[ReplayedRequest, BatchPreparer],
) -> None:
    request, worker = replayed
    trigger = BehaviorEvent(user_id=1, item_id=103, category_id=2, behavior="pv", ts=T0 + 40_000)
    served = RecRequest(request_id="r", user_id=1, ts=T0 + 41_000, k=10, trigger=trigger)
    [prepared] = worker.prepare([served]).requests
    assert prepared.candidates == request.candidates
    assert prepared.categories == request.categories
    ours, theirs = request.model_input, prepared.model_input
    for name in ("seq_items", "seq_cats", "cand_items", "cand_cats", "cand_dense"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
    np.testing.assert_array_equal(ours.user_dense, np.asarray(theirs.user_dense, np.float32))
    assert theirs.cand_dense.shape == (len(request.candidates), len(CANDIDATE_FEATURES))


def test_rows_pad_each_list_and_mark_the_touched_candidates() -> None:
    events = _events()
    vocab_items = {101: 1, 102: 1, 103: 2}
    vocab = Vocabulary.build(vocab_items, vocab_items.values())
    table = np.zeros(vocab.num_items, np.int64)
    table[vocab.item_index(list(vocab_items))] = list(vocab_items.values())
    search = EmbeddingSearch(np.zeros((vocab.num_items, 4), np.float32), vocab, table)
    first_of_user_1 = (events.user == 1) & (events.item == 101)
    replay = StoreReplay(events, search, [103])
    requests = list(replay.run(first_of_user_1 | (events.user == 2) & (events.item == 101)))
    rows = list_rows(requests, width=5)
    # User 2 touched 102 next; user 1 touched 102 and 103 next.
    assert [r.truth for r in requests] == [{102}, {102, 103}]
    assert rows.cand_items.shape == (2, 5)
    for row, request in enumerate(requests):
        size = len(request.candidates)
        assert rows.mask[row].tolist() == [True] * size + [False] * (5 - size)
        assert (rows.cand_items[row, size:] == PAD_INDEX).all()
        touched = [float(c.item_id in request.truth) for c in request.candidates]
        assert rows.labels[row, :size].tolist() == touched and sum(touched) >= 1
