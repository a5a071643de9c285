from schemas.candidates import HistoryTouch
from schemas.online.history import fold_fresh_touches, history_order


def test_a_history_holding_every_fresh_touch_is_unchanged() -> None:
    history = [HistoryTouch(7, 3_000, 2), HistoryTouch(5, 1_000, 1)]
    # Item 7 at 2_000 and 3_000 and item 5 at 1_000 are already counted.
    assert fold_fresh_touches(history, [5, 7, 7], [1_000, 2_000, 3_000]) == history


def test_a_trigger_the_history_lacks_raises_time_and_count() -> None:
    history = [HistoryTouch(7, 3_000, 2), HistoryTouch(5, 1_000, 1)]
    folded = fold_fresh_touches(history, [5, 7, 5], [1_000, 3_000, 4_000])
    assert folded == [HistoryTouch(5, 4_000, 2), HistoryTouch(7, 3_000, 2)]


def test_touches_missing_from_an_empty_history_are_each_counted() -> None:
    folded = fold_fresh_touches([], [9, 4, 9], [1_000, 2_000, 5_000])
    assert folded == [HistoryTouch(9, 5_000, 2), HistoryTouch(4, 2_000, 1)]


def test_the_fold_orders_as_the_store_does() -> None:
    # Equal times tie by the member's bytes descending, as ZREVRANGE returns them.
    folded = fold_fresh_touches([HistoryTouch(10, 2_000, 1)], [9], [2_000])
    expected = history_order({10: (2_000, 1), 9: (2_000, 1)})
    assert folded == expected
    assert [t.item_id for t in folded] == [9, 10]
