"""The vectorised fresh-clicks encoder gives Feast's bytes, or steps aside."""

from __future__ import annotations

import random

import pytest
from feast.protos.feast.types.Value_pb2 import Int64List, StringList
from feast.protos.feast.types.Value_pb2 import Value as ValueProto

from jobs.feature_writer.rows import (
    ConversionOptions,
    convert_batch,
    select_recent,
    to_row,
)
from jobs.feature_writer.sequence_batch import encode_sequences
from schemas.features import FeatureUpdate, UserRecentEvents, pack_event
from schemas.online.feast_format import decode_value
from tests.jobs.feature_writer.samples import T0, item_window, recent


def oracle(packed: list[str]) -> list[bytes]:
    """Feast's own protobuf encoding of the four arrays."""
    fields = [p.split(":") for p in packed]
    ints = [[int(f[i]) for f in fields] for i in (1, 2, 0)]
    return [
        ValueProto(int64_list_val=Int64List(val=ints[0])).SerializeToString(),
        ValueProto(int64_list_val=Int64List(val=ints[1])).SerializeToString(),
        ValueProto(string_list_val=StringList(val=[f[3] for f in fields])).SerializeToString(),
        ValueProto(int64_list_val=Int64List(val=ints[2])).SerializeToString(),
    ]


def random_selection(rng: random.Random) -> list[str]:
    return sorted(
        pack_event(
            T0 - rng.randrange(10**7),
            rng.choice([1, 127, 128, 16_383, 16_384, rng.randrange(1, 10**15)]),
            rng.randrange(1, 10 ** rng.randrange(1, 8)),
            rng.choice(["pv", "cart", "fav", "buy"]),
        )
        for _ in range(rng.choice([0, 1, 2, 50, 300]))
    )


def test_matches_protobuf_on_random_batches() -> None:
    rng = random.Random(5)
    for _ in range(30):
        selections = [random_selection(rng) for _ in range(rng.randrange(1, 40))]
        assert encode_sequences(selections) == [oracle(s) for s in selections]


def test_empty_rows_and_empty_batches() -> None:
    assert encode_sequences([[], []]) == [oracle([]), oracle([])]
    assert encode_sequences([]) == []


@pytest.mark.parametrize(
    "odd",
    [
        f"{T0}:1234567890123456:2:pv",  # 16 digits: beyond the float64-exact width
        f"{T0}:5:6:click",  # unknown behaviour
        f"{T0}:5:6:pvx",
        f"{T0}:5:6:",
        f"{T0}:+5:6:pv",  # int() would take it; the reference path decides
        f"{T0}:5_0:6:pv",
        f"{T0 // 10}:5:6:pv",  # not 13 digits
        f"{T0}:5:6:pv:extra",
        f"{T0}:5:6",
        f"{T0}:5:6:pv\n{T0}:5:6:pv",
        f"{T0}:é:6:pv",
    ],
)
def test_steps_aside_for_anything_unusual(odd: str) -> None:
    assert encode_sequences([[f"{T0}:1:2:pv"], [odd]]) is None


def test_misaligned_colons_that_add_up_are_caught() -> None:
    assert encode_sequences([[f"{T0}:1:2", f"pv:{T0}:3:4:buy"]]) is None


def test_convert_batch_rows_equal_the_reference_rows() -> None:
    options = ConversionOptions()
    updates = [recent(user_id=u, n=u % 7) for u in range(1, 30)]
    rows, failed = convert_batch([(None, u) for u in updates], options)
    assert failed == []
    for row, update in zip(rows, updates, strict=True):
        reference = to_row(update, options)
        assert row.encoded is not None and reference.values is not None
        decoded = dict(zip(row.view.feature_names, map(decode_value, row.encoded), strict=True))
        assert decoded == reference.values
        assert (row.view, row.entity_id) == (reference.view, update.user_id)


def test_convert_batch_falls_back_and_reports_broken_updates() -> None:
    broken = UserRecentEvents(user_id=99, latest_ts=T0, events=[f"{T0}:x:1:pv"])
    odd = UserRecentEvents(user_id=98, latest_ts=T0, events=[f"{T0}:5:6:click"])
    items: list[tuple[str, FeatureUpdate]] = [
        ("a", recent(user_id=1)),
        ("b", broken),
        ("c", odd),
        ("d", item_window()),
    ]
    rows, failed = convert_batch(items, ConversionOptions())
    assert [(source, exc.__class__) for source, _, exc in failed] == [("b", ValueError)]
    by_entity = {row.entity_id: row for row in rows}
    assert by_entity[98].decoded() == {
        "item_ids": [5],
        "category_ids": [6],
        "behaviors": ["click"],
        "event_ts": [T0],
    }
    assert sorted(by_entity) == [1, 98, 101]


def test_select_recent_keeps_what_recent_events_keeps() -> None:
    update = recent(n=40, step_ms=60_000)
    assert len(select_recent(update, ConversionOptions(horizon_ms=30 * 60_000, limit=50))) == 30
    assert len(select_recent(update, ConversionOptions(horizon_ms=10**9, limit=25))) == 25
