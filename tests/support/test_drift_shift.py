from __future__ import annotations

import pytest

from jobs.drift.columns import drift_row
from schemas.features import ItemWindow, UserWindow, pack_event
from schemas.records import BehaviorEvent
from tests.support.drift_shift import Shift, category_swap, shift_rows

T0 = 1_700_000_000_000


def events(categories: list[int]) -> list[BehaviorEvent]:
    return [BehaviorEvent(1, 10 + i, c, "pv", T0 + i) for i, c in enumerate(categories)]


def test_swap_pairs_popular_with_rare_one_to_one() -> None:
    swap = category_swap(events([1, 1, 1, 2, 2, 3, 4]), count=1)
    assert swap == {1: 4, 4: 1}


def test_category_mix_moves_categories_only() -> None:
    user = UserWindow(
        1, T0, T0 + 1, [pack_event(T0, 5, 1, "pv"), pack_event(T0 + 1, 6, 2, "buy")], 1, 0, 0, 1
    )
    item = ItemWindow(5, 1, T0, T0 + 1, pv=1, cart=0, fav=0, buy=0)
    shifted = shift_rows([user, item], Shift(names=("category_mix",)), {1: 9, 9: 1})
    before, after = drift_row(user), drift_row(shifted[0])
    assert before is not None and after is not None
    assert after["user_top_category"] in (9, 2)
    assert {k: v for k, v in after.items() if k != "user_top_category"} == {
        k: v for k, v in before.items() if k != "user_top_category"
    }
    assert drift_row(shifted[1]) == {"item_category": 9, "item_window_events": 1}


def test_longer_sequences_multiply_length_and_counts_not_conversion() -> None:
    user = UserWindow(1, T0, T0 + 1, [pack_event(T0, 5, 1, "pv")] * 2, 2, 0, 0, 1)
    shifted = shift_rows([user], Shift(names=("longer_sequences",), factor=3), {})
    row = drift_row(shifted[0])
    assert row is not None
    assert (row["user_seq_length"], row["user_window_events"]) == (6, 9)
    assert row["user_conversion"] == 0.5


def test_unknown_shift_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown shift"):
        Shift(names=("bigger_prices",))
