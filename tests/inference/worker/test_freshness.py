"""Read-your-writes logic without services: which triggers the store lacks, waiting, folding."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from inference.worker.features import Row, UserFeatures, fold_event, row_includes, user_features
from inference.worker.freshness import behind, wait_for_triggers, with_triggers
from schemas.records import BehaviorEvent, RecRequest

T = 1_700_000_000_000
CLICK = BehaviorEvent(user_id=1, item_id=42, category_id=7, behavior="pv", ts=T)


def row(items: list[int], behaviors: list[str], ts: list[int]) -> Row:
    return {"item_ids": items, "category_ids": [7] * len(items), "behaviors": behaviors,
            "event_ts": ts, "_event_ms": max(ts)}  # fmt: skip


def request(user: int, trigger: BehaviorEvent | None) -> RecRequest:
    return RecRequest(f"r{user}", user, T, trigger=trigger)


def test_a_row_includes_only_the_same_item_behaviour_and_time() -> None:
    assert row_includes(row([5, 42], ["pv", "pv"], [T - 9, T]), CLICK)
    # Each differing column alone is a different event (a broken check comparing items only fails).
    assert not row_includes(row([42], ["pv"], [T - 1]), CLICK)
    assert not row_includes(row([42], ["cart"], [T]), CLICK)
    assert not row_includes(row([41], ["pv"], [T]), CLICK)
    assert not row_includes(None, CLICK)
    assert not row_includes({}, CLICK)


def test_folding_appends_the_click_cuts_the_sequence_and_applies_the_exclusions() -> None:
    user = UserFeatures(1, items=[1, 2, 3], categories=[5, 5, 6], features_at=T - 50)
    folded = fold_event(user, CLICK, limit=3, excluded_behaviors=frozenset({"pv"}))
    assert folded.items == [2, 3, 42]
    assert folded.categories == [5, 6, 7]
    assert folded.excluded == frozenset({42})
    assert fold_event(user, CLICK, limit=3).excluded == frozenset()  # default: only bought
    assert folded.features_at == T - 50  # still the store's age
    cart = fold_event(user, BehaviorEvent(1, 43, 8, "cart", T), limit=10)
    assert cart.items == [1, 2, 3, 43] and cart.excluded == frozenset()


def test_behind_lists_requests_whose_trigger_neither_row_holds() -> None:
    other = BehaviorEvent(2, 9, 7, "pv", T)
    requests = [request(1, CLICK), request(2, other), request(3, None)]
    recent: list[Row | None] = [row([42], ["pv"], [T]), None, None]
    window: list[Row | None] = [None, None, None]
    assert behind(requests, recent, window) == [1]
    assert behind(requests, [None, None, None], [None, row([9], ["pv"], [T]), None]) == [0]


class StoreCatchingUp:
    """A user reader whose rows gain the trigger after ``reads_until_fresh`` re-reads."""

    def __init__(self, reads_until_fresh: int) -> None:
        self.reads = 0
        self.asked: list[list[int]] = []
        self.reads_until_fresh = reads_until_fresh

    def __call__(self, ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        self.reads += 1
        self.asked.append(list(ids))
        fresh = self.reads >= self.reads_until_fresh
        rows: list[Row | None] = [row([42], ["pv"], [T]) if fresh else None for _ in ids]
        return rows, [None] * len(ids)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_waiting_re_reads_only_users_behind_until_the_store_has_the_trigger() -> None:
    clock = FakeClock()
    reader = StoreCatchingUp(reads_until_fresh=3)
    requests = [request(1, CLICK), request(2, None)]
    recent: list[Row | None] = [None, {"item_ids": [1]}]
    window: list[Row | None] = [None, None]
    lacking = wait_for_triggers(reader, requests, recent, window, 1.0, clock, clock.sleep)
    assert lacking == []
    assert reader.asked == [[1], [1], [1]]  # never the user without a trigger
    assert recent[0] is not None and row_includes(recent[0], CLICK)
    assert recent[1] == {"item_ids": [1]}
    assert clock.now == pytest.approx(0.006)


def test_waiting_stops_at_the_budget_and_a_zero_budget_never_re_reads() -> None:
    clock = FakeClock()
    reader = StoreCatchingUp(reads_until_fresh=10**9)
    recent: list[Row | None] = [None]
    lacking = wait_for_triggers(
        reader, [request(1, CLICK)], recent, [None], 0.01, clock, clock.sleep
    )
    assert lacking == [0]
    assert clock.now == pytest.approx(0.01)
    assert reader.reads == 5  # every 2 ms within 10 ms
    never = StoreCatchingUp(reads_until_fresh=1)
    assert wait_for_triggers(never, [request(1, CLICK)], [None], [None], 0.0) == [0]
    assert never.reads == 0


def test_outcomes_store_folded_missing_and_none() -> None:
    requests = [request(1, CLICK), request(2, CLICK), request(3, None)]
    users = [user_features(n, None, None) for n in (1, 2, 3)]
    folded_users, outcomes = with_triggers(requests, users, [1], fold=True, limit=50)
    assert outcomes == ["store", "folded", None]
    assert folded_users[0].items == [] and folded_users[1].items == [42]
    kept, flagged = with_triggers(requests, users, [1], fold=False, limit=50)
    assert flagged == ["store", "missing", None]
    assert kept[1].items == []
