"""The Redis format against Feast 0.67's own functions, used as the oracle."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from feast import utils
from feast.infra.online_stores.helpers import _mmh3, _redis_key
from feast.protos.feast.types.EntityKey_pb2 import EntityKey as EntityKeyProto
from feast.protos.feast.types.Value_pb2 import DoubleList, Int64List, StringList
from feast.protos.feast.types.Value_pb2 import Value as ValueProto
from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped]

from schemas.online import feast_format as ff
from schemas.views import PROJECT, VIEWS, FeatureKind


def feast_key(join_key: str, entity_id: int, project: str = PROJECT) -> bytes:
    entity = EntityKeyProto(join_keys=[join_key], entity_values=[ValueProto(int64_val=entity_id)])
    key: bytes = _redis_key(project, entity, entity_key_serialization_version=3)
    return key


@pytest.mark.parametrize("entity_id", [1, 7, 2**31, 2**53 - 1, 2**63 - 1, -5])
@pytest.mark.parametrize("join_key", ["user_id", "item_id", "category_id", "ключ"])
def test_redis_key_matches_feast(join_key: str, entity_id: int) -> None:
    assert ff.redis_key(join_key, entity_id, PROJECT) == feast_key(join_key, entity_id)


def test_view_spec_key_and_fields_match_feast() -> None:
    for spec in VIEWS.values():
        rows_at = ff.layout(spec)
        assert rows_at.redis_key(42, "other") == feast_key(spec.join_key, 42, "other")
        assert rows_at.ts_field == f"_ts:{spec.name}".encode()
        for feature in spec.features:
            assert rows_at.field_hashes[feature.name] == _mmh3(f"{spec.name}:{feature.name}")


@pytest.mark.parametrize("text", ["user_recent_clicks:item_ids", "a:b", "", "é:ü", "x" * 300])
def test_field_hash_matches_feast(text: str) -> None:
    view, _, feature = text.partition(":")
    assert ff.field_hash(view, feature) == _mmh3(f"{view}:{feature}")


ORACLE_CASES = [
    (FeatureKind.INT64, 0, ValueProto(int64_val=0)),
    (FeatureKind.INT64, -(2**63), ValueProto(int64_val=-(2**63))),
    (FeatureKind.INT64, 2**53 - 1, ValueProto(int64_val=2**53 - 1)),
    (FeatureKind.DOUBLE, 0.0, ValueProto(double_val=0.0)),
    (FeatureKind.DOUBLE, 1 / 3, ValueProto(double_val=1 / 3)),
    (FeatureKind.STRING, "pv", ValueProto(string_val="pv")),
    (FeatureKind.INT64_LIST, [], ValueProto(int64_list_val=Int64List(val=[]))),
    (
        FeatureKind.INT64_LIST,
        [1, -1, 2**62],
        ValueProto(int64_list_val=Int64List(val=[1, -1, 2**62])),
    ),
    (
        FeatureKind.INT64_LIST,
        list(range(10**12, 10**12 + 300)),
        ValueProto(int64_list_val=Int64List(val=list(range(10**12, 10**12 + 300)))),
    ),
    (FeatureKind.STRING_LIST, [], ValueProto(string_list_val=StringList(val=[]))),
    (
        FeatureKind.STRING_LIST,
        ["pv", "bü"],
        ValueProto(string_list_val=StringList(val=["pv", "bü"])),
    ),
    (
        FeatureKind.DOUBLE_LIST,
        [0.5, -2.0],
        ValueProto(double_list_val=DoubleList(val=[0.5, -2.0])),
    ),
]


@pytest.mark.parametrize(("kind", "value", "oracle"), ORACLE_CASES)
def test_encode_value_matches_protobuf(
    kind: FeatureKind, value: object, oracle: ValueProto
) -> None:
    encoded = ff.encode_value(kind, value)
    assert encoded == oracle.SerializeToString()
    assert ff.decode_value(encoded) == value


def test_decode_value_of_unset_and_missing_is_none() -> None:
    assert ff.decode_value(None) is None
    assert ff.decode_value(ValueProto().SerializeToString()) is None


@pytest.mark.parametrize("epoch_ms", [1_700_000_000_000, 1_700_000_000_001, 631_152_000_999, 1000])
def test_timestamp_matches_feast(epoch_ms: int) -> None:
    # Feast: make_tzaware(datetime) -> Timestamp.FromDatetime -> SerializeToString.
    stamp = Timestamp()
    stamp.FromDatetime(utils.make_tzaware(datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)))
    assert ff.encode_timestamp(epoch_ms * 1_000_000) == stamp.SerializeToString()
    assert ff.decode_timestamp_ns(ff.encode_timestamp(epoch_ms * 1_000_000)) == epoch_ms * 1_000_000


def test_zero_or_missing_timestamp_means_no_row() -> None:
    assert ff.decode_timestamp_ns(None) is None
    assert ff.decode_timestamp_ns(b"") is None
    assert ff.decode_timestamp_ns(Timestamp(seconds=0, nanos=0).SerializeToString()) is None


def test_encode_row_interleaves_fields_and_values_in_view_order() -> None:
    spec = VIEWS["item_trends"]
    values = {
        "category_id": 3,
        "pv": 4,
        "cart": 0,
        "fav": 1,
        "buy": 2,
        "conversion": 0.5,
        "window_start": 9,
    }
    encoded = ff.encode_row(spec, values)
    assert encoded[0::2] == [ff.layout(spec).field_hashes[name] for name in spec.feature_names]
    assert ff.decode_row(spec, spec.feature_names, encoded[1::2]) == values
