"""The co-visit route inside a batch's preparation, with an in-memory store (no services).

Items the model never saw come out of the route and reach the ranker as the OOV
index with the category of their trends row; a Redis failure while reading the
sets degrades the batch like any other read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import redis

from inference.worker.features import TIMESTAMP, Row
from inference.worker.metrics import WorkerMetrics
from inference.worker.prepare import REDIS_DOWN, BatchPreparer
from inference.worker.settings import WorkerSettings
from schemas.candidates import HistoryTouch
from schemas.ranking import FIRST_ID_INDEX, OOV_INDEX
from schemas.recall import Candidate
from schemas.records import RecRequest
from tests.support.artifacts import write_random_artifacts

T0 = 1_700_000_000_000
UNSEEN = 2**40  # not in the model's vocabulary
UNSEEN_CATEGORY = 2  # known to the model, told by the item's trends row


class MemoryReader:
    """User 1 viewed 101 then carted 102; co-visits and trends as given."""

    def __init__(self, fail_neighbours: bool = False) -> None:
        self.fail_neighbours = fail_neighbours
        self.calls: list[str] = []
        self.neighbour_lists = {
            101: [(103, 2.0), (UNSEEN, 1.0)],
            102: [(101, 5.0), (UNSEEN, 2.0)],
        }

    def users(self, ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        self.calls.append("users")
        recent: Row = {
            "item_ids": [101, 102], "category_ids": [1, 1], "behaviors": ["pv", "cart"],
            "event_ts": [T0 - 1000, T0], TIMESTAMP: T0,
        }  # fmt: skip
        return [recent if i == 1 else None for i in ids], [None for _ in ids]

    def routes_and_histories(
        self,
        categories: Sequence[int],
        items: Sequence[int],
        per_item: int,
        user_ids: Sequence[int],
    ) -> tuple[list[Row | None], list[list[tuple[int, float]]], list[list[HistoryTouch]]]:
        """One round trip for the routes, as FeatureReader.routes_and_histories."""
        self.calls.append(f"routes {list(categories)}; neighbours {list(items)} {per_item}")
        if self.fail_neighbours:
            raise redis.ConnectionError("Connection refused")
        neighbours = [self.neighbour_lists.get(i, [])[:per_item] for i in items]
        histories = [[HistoryTouch(104, T0 - 3_600_000, 2)] if u == 1 else [] for u in user_ids]
        return [None for _ in categories], neighbours, histories

    def items(
        self, ids: Sequence[int], stock_of: Sequence[int] | None = None
    ) -> tuple[list[Row | None], list[bool]]:
        self.calls.append("items")
        trends: Row = {"category_id": UNSEEN_CATEGORY, "pv": 4, "cart": 1, "fav": 0, "buy": 0}
        stock_ids = ids if stock_of is None else stock_of
        return [trends if i == UNSEEN else None for i in ids], [False for _ in stock_ids]


def preparer(tmp_path: Path, reader: MemoryReader, **settings: Any) -> BatchPreparer:
    artifacts = write_random_artifacts(tmp_path, {101: 1, 102: 1, 103: 2}, popular=[103])
    return BatchPreparer(WorkerSettings(**settings), artifacts, reader, WorkerMetrics())  # type: ignore[arg-type]


def request() -> RecRequest:
    return RecRequest(request_id="r", user_id=1, ts=T0, k=5)


def test_covisited_items_lead_and_an_unseen_one_is_ranked_with_its_trends_category(
    tmp_path: Path,
) -> None:
    reader = MemoryReader()
    prep = preparer(
        tmp_path, reader, covisit_clicks=2, covisit_candidates=3, exclude_behaviors="pv,buy"
    )
    [prepared] = prep.prepare([request()]).requests
    # Seeds 102 then 101; 101 was just viewed and views are excluded here, so it is left
    # out (post-processing would drop it anyway); UNSEEN: 1 + 2 = 3, 103: 2.
    assert "routes [1]; neighbours [101, 102] 3" in reader.calls
    assert prepared.candidates[:2] == [Candidate(UNSEEN, "covisit"), Candidate(103, "covisit")]
    assert prepared.reasons == []
    assert prepared.model_input.cand_items[0] == OOV_INDEX
    assert prepared.categories[0] == UNSEEN_CATEGORY
    category_index = prep.artifacts.vocab.category_index([UNSEEN_CATEGORY])[0]
    assert prepared.model_input.cand_cats[0] == category_index >= FIRST_ID_INDEX
    assert prepared.model_input.cand_dense[0].any()  # the trends row's counts


def test_zero_candidates_turns_the_route_off_without_a_read(tmp_path: Path) -> None:
    reader = MemoryReader()
    [prepared] = preparer(tmp_path, reader, covisit_candidates=0).prepare([request()]).requests
    assert "covisit" not in {c.route for c in prepared.candidates}
    assert "routes [1]; neighbours [] 0" in reader.calls and prepared.reasons == []


def test_redis_failing_on_the_sets_degrades_the_batch_and_opens_the_breaker(
    tmp_path: Path,
) -> None:
    reader = MemoryReader(fail_neighbours=True)
    prep = preparer(tmp_path, reader)
    [prepared] = prep.prepare([request()]).requests
    assert prepared.reasons == [REDIS_DOWN]
    assert "covisit" not in {c.route for c in prepared.candidates}
    assert prepared.candidates  # embedding and popular still answer
    assert "items" not in reader.calls and not prep.redis_breaker.admits()


@pytest.mark.parametrize("clicks", [0, 1])
def test_only_the_last_clicks_are_seeds(tmp_path: Path, clicks: int) -> None:
    reader = MemoryReader()
    preparer(tmp_path, reader, covisit_clicks=clicks).prepare([request()])
    seeds = [102] if clicks else []
    assert f"routes [1]; neighbours {seeds} 40" in reader.calls


def test_the_recent_route_holds_the_fresh_view_then_the_history(tmp_path: Path) -> None:
    reader = MemoryReader()
    [prepared] = preparer(tmp_path, reader).prepare([request()]).requests
    recent = [c.item_id for c in prepared.candidates if c.route == "recent"]
    covisited = {c.item_id for c in prepared.candidates if c.route == "covisit"}
    # 102 and 101 are the fresh view's, most recent first (101 came by co-visits first).
    assert recent == [i for i in (102, 101, 104) if i not in covisited]
    assert 104 in recent and prepared.touched == {101, 102, 104}
