from __future__ import annotations

import pytest

from inference.worker.features import (
    TIMESTAMP,
    decode_checked,
    item_features,
    stored_fields,
    top_items,
    typed_value,
    user_features,
)
from runtime.online.redis_store import decode_reply
from schemas.online.feast_format import encode_timestamp, encode_value
from schemas.online.feast_protos import ValueProto
from schemas.ranking import ZERO_ITEM_DENSE
from schemas.views import VIEWS


def test_unknown_user_has_no_sequence_and_no_time() -> None:
    user = user_features(7, None, None)
    assert user.items == [] and user.features_at is None
    assert user.dense == [0.0, 0.0, 0.0, 0.0]  # log1p(0)


def test_fresh_sequence_wins_and_items_of_the_excluded_behaviours_are_left_out() -> None:
    recent = {
        "item_ids": [1, 2, 3],
        "category_ids": [10, 20, 30],
        "behaviors": ["pv", "cart", "pv"],
        TIMESTAMP: 2000,
    }
    window = {
        "item_ids": [9, 8],
        "category_ids": [90, 80],
        "behaviors": ["buy", "fav"],
        "pv_count": 3,
        "cart_count": 1,
        "fav_count": 1,
        "buy_count": 1,
        TIMESTAMP: 1000,
    }
    user = user_features(7, recent, window)
    assert user.items == [1, 2, 3] and user.categories == [10, 20, 30]
    assert user.excluded == {9}  # by default only bought items
    assert user_features(7, recent, window, frozenset({"pv", "buy"})).excluded == {1, 3, 9}
    # log1p of the window counts 3, 1, 1, 1, worked by hand: ln 4, ln 2, ln 2, ln 2.
    assert user.dense == pytest.approx([1.3862944, 0.6931472, 0.6931472, 0.6931472])
    assert user.features_at == 2000


def test_window_sequence_used_when_no_fresh_events() -> None:
    window = {"item_ids": [9], "category_ids": [90], "behaviors": ["fav"], TIMESTAMP: 5}
    assert user_features(7, None, window).items == [9]


def test_item_features_and_trends() -> None:
    row = {"category_id": 4, "pv": 10, "cart": 1, "fav": 0, "buy": 2, "conversion": 0.2}
    features = item_features(row)
    assert features.category_id == 4 and features.trend_score == 10 + 3 + 8
    assert item_features(None).dense == ZERO_ITEM_DENSE
    assert top_items({"top_item_ids": [3, 1]}) == [3, 1] and top_items(None) == []


def test_a_stored_row_decodes_as_feast_returns_it() -> None:
    spec = VIEWS["user_recent_clicks"]
    names = list(spec.feature_names)
    values = {name: None for name in names} | {"item_ids": [3, 4], "behaviors": ["pv", "buy"]}
    kinds = {f.name: f.kind for f in spec.features}
    reply = [
        None if values[name] is None else encode_value(kinds[name], values[name]) for name in names
    ] + [encode_timestamp(1_700_000_000_123_000_000)]
    expected = decode_reply(spec, names, reply, TIMESTAMP)
    assert decode_checked(names, stored_fields(spec, names), reply) == expected
    assert expected is not None and expected["item_ids"] == [3, 4]


def test_a_value_stored_as_another_kind_is_refused() -> None:
    assert typed_value(ValueProto(int64_val=7).SerializeToString(), "int64_val") == 7
    assert typed_value(ValueProto().SerializeToString(), "int64_val") is None  # unset
    with pytest.raises(TypeError, match="string_val where a int64_val"):
        typed_value(ValueProto(string_val="seven").SerializeToString(), "int64_val")
    with pytest.raises(TypeError):
        typed_value(ValueProto(int64_val=7).SerializeToString(), "int64_list_val")


def test_a_row_without_its_time_is_absent() -> None:
    assert decode_checked(["pv"], ["int64_val"], [b"", None]) is None
