from __future__ import annotations

from jobs.drift.columns import (
    COLUMN_NAMES,
    COLUMNS,
    OTHER_CATEGORY,
    bucket_categories,
    drift_row,
    drift_rows,
    top_categories,
)
from schemas.features import CategoryWindow, ItemWindow, UserRecentEvents, UserWindow, pack_event
from schemas.records import RecItem, Recommendation

T0 = 1_700_000_000_000


def user_window(categories: list[int], pv: int = 3, buy: int = 1) -> UserWindow:
    events = [pack_event(T0 + i, 100 + i, c, "pv") for i, c in enumerate(categories)]
    return UserWindow(1, T0, T0 + 1_800_000, events, pv=pv, cart=0, fav=0, buy=buy)


def test_user_window_columns_describe_length_counts_and_category_mix() -> None:
    row = drift_row(user_window([7, 7, 9, 7]))
    assert row == {
        "user_seq_length": 4,
        "user_window_events": 4,
        "user_conversion": 1 / 3,
        "user_top_category": 7,
        "user_top_category_share": 0.75,
        "user_distinct_categories": 2,
    }


def test_empty_sequence_has_no_top_category() -> None:
    row = drift_row(user_window([], pv=0, buy=0))
    assert row is not None
    assert row["user_top_category"] is None and row["user_top_category_share"] is None
    assert row["user_conversion"] == 0.0


def test_item_category_and_recommendation_rows() -> None:
    item = ItemWindow(5, 42, T0, T0 + 1, pv=2, cart=1, fav=0, buy=1)
    assert drift_row(item) == {"item_category": 42, "item_window_events": 4}
    category = CategoryWindow(42, T0, T0 + 1, pv=1, cart=1, fav=1, buy=1, top_items=[])
    assert drift_row(category) == {"category_window_events": 4}
    rec = Recommendation(
        "r1",
        1,
        [RecItem(1, 0.9, "embedding"), RecItem(2, 0.1, "trend")],
        "v1",
        None,
        T0,
    )
    assert drift_row(rec) == {"rec_top_score": 0.9, "rec_mean_score": 0.5, "rec_items": 2}


def test_fresh_user_rows_are_left_out() -> None:
    recent = UserRecentEvents(1, T0, [pack_event(T0, 1, 2, "pv")])
    assert drift_row(recent) is None
    assert drift_rows([recent, user_window([1])])[0]["user_seq_length"] == 1


def test_every_row_key_is_a_known_column() -> None:
    row = drift_row(user_window([1, 2]))
    assert row is not None and set(row) <= set(COLUMN_NAMES)


def test_categories_bucket_on_the_reference_vocabulary() -> None:
    vocabulary = top_categories([3, 3, 3, 5, 5, 8, None, float("nan")], keep=2)
    assert vocabulary == [3, 5]
    assert bucket_categories([3, 8, None, 5.0], vocabulary) == ["c3", OTHER_CATEGORY, None, "c5"]


def test_every_feature_column_comes_from_a_defined_view() -> None:
    from schemas.features import VIEW_TAGS
    from schemas.views import VIEWS, view_of_tag

    sources = {column.source for column in COLUMNS} - {"recommendations"}
    assert sources <= set(VIEW_TAGS)
    assert {view_of_tag(tag).name for tag in sources} <= set(VIEWS)
