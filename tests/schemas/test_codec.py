from __future__ import annotations

import json

import pytest

from schemas.codec import RecordCodec, event_codec, request_codec
from schemas.errors import (
    ImplausibleTimestamp,
    InvalidRecord,
    MalformedRecord,
    OversizedRecord,
    SchemaViolation,
)
from schemas.records import BehaviorEvent, RecRequest

NOW_MS = 1_800_000_000_000
GOOD = {
    "user_id": 1,
    "item_id": 2268318,
    "category_id": 2520377,
    "behavior": "pv",
    "ts": 1511544070000,
}


def codec() -> RecordCodec[BehaviorEvent]:
    return event_codec(clock=lambda: NOW_MS)


def raw(**changes: object) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


def test_decodes_a_valid_event() -> None:
    assert codec().decode(raw()) == BehaviorEvent(1, 2268318, 2520377, "pv", 1511544070000)


def test_round_trips_through_encode() -> None:
    event = BehaviorEvent(7, 8, 9, "buy", NOW_MS)
    assert codec().decode(codec().encode(event)) == event


def test_ignores_unknown_fields_for_forward_compatibility() -> None:
    assert codec().decode(raw(source="app")).user_id == 1


@pytest.mark.parametrize(
    ("payload", "error", "fragment"),
    [
        (b'{"user_id": 1, "item_id"', MalformedRecord, "not valid JSON"),
        (b"\xff\xfe not json", MalformedRecord, "not valid JSON"),
        (b"", MalformedRecord, "not valid JSON"),
        (raw(user_id="1"), SchemaViolation, "$.user_id"),
        (raw(item_id=1.5), SchemaViolation, "$.item_id"),
        (raw(behavior="click"), SchemaViolation, "$.behavior"),
        (raw(user_id=0), SchemaViolation, ">= 1"),
        (raw(user_id=2**60), SchemaViolation, "$.user_id"),
        (b'{"user_id": 1, "item_id": 2, "behavior": "pv", "ts": 1511544070000}', SchemaViolation,
         "category_id"),
        (raw(ts=1511544070), SchemaViolation, "$.ts"),  # seconds, not milliseconds
        (raw(ts=NOW_MS + 86_400_000), ImplausibleTimestamp, "ahead of the consumer's clock"),
        (b"[1, 2, 3]", SchemaViolation, "Expected `object`"),
    ],
)  # fmt: skip
def test_refuses_bad_events_with_a_readable_reason(
    payload: bytes, error: type[InvalidRecord], fragment: str
) -> None:
    with pytest.raises(error) as caught:
        codec().decode(payload)
    assert fragment in str(caught.value)
    assert caught.value.kind == error.kind


def test_allows_small_clock_skew() -> None:
    assert codec().decode(raw(ts=NOW_MS + 60_000)).ts == NOW_MS + 60_000


def test_refuses_oversized_messages_before_parsing() -> None:
    padded = raw(padding="x" * 2000)
    with pytest.raises(OversizedRecord, match="exceeds the 1024-byte limit"):
        codec().decode(padded)


def test_request_defaults_and_limits() -> None:
    requests = request_codec(clock=lambda: NOW_MS)
    request = requests.decode(b'{"request_id": "r-1", "user_id": 5, "ts": 1511544070000}')
    assert request == RecRequest("r-1", 5, 1511544070000, k=20, candidates=None, context=None)
    with pytest.raises(SchemaViolation, match="k"):
        requests.decode(b'{"request_id": "r-1", "user_id": 5, "ts": 1511544070000, "k": 0}')
    too_many = json.dumps(
        {"request_id": "r", "user_id": 5, "ts": 1511544070000, "candidates": list(range(1, 1002))}
    ).encode()
    with pytest.raises(SchemaViolation, match="candidates"):
        requests.decode(too_many)
    with pytest.raises(SchemaViolation, match="request_id"):
        requests.decode(b'{"request_id": "has space", "user_id": 5, "ts": 1511544070000}')


def request_with_trigger(**trigger_changes: object) -> bytes:
    trigger = {**GOOD, **trigger_changes}
    return json.dumps({"request_id": "r-2", "user_id": 1, "ts": 1511544070000,
                       "trigger": trigger}).encode()  # fmt: skip


def test_request_carries_its_trigger_event() -> None:
    request = request_codec(clock=lambda: NOW_MS).decode(request_with_trigger())
    assert request.trigger == BehaviorEvent(1, 2268318, 2520377, "pv", 1511544070000)


def test_refuses_a_trigger_of_another_user_or_from_the_future() -> None:
    codec = request_codec(clock=lambda: NOW_MS)
    with pytest.raises(SchemaViolation, match=r"trigger\.user_id=2 differs from user_id=1"):
        codec.decode(request_with_trigger(user_id=2))
    with pytest.raises(ImplausibleTimestamp, match=r"trigger\.ts="):
        codec.decode(request_with_trigger(ts=NOW_MS + 86_400_000))
    with pytest.raises(SchemaViolation, match="behavior"):
        codec.decode(request_with_trigger(behavior="click"))


@pytest.mark.parametrize("depth", [2_000, 30_000])
def test_deep_nesting_in_an_unknown_field_is_malformed_not_a_crash(depth: int) -> None:
    # 2,000 arrays fit in a 4 KiB request: msgspec raises RecursionError, which would
    # escape every consumer loop and crash-loop it on the same uncommitted record.
    nested = b"[" * depth + b"]" * depth
    request = b'{"request_id":"r","user_id":1,"ts":1511544070000,"extra":' + nested + b"}"
    with pytest.raises(MalformedRecord, match="nested too deeply"):
        request_codec(clock=lambda: NOW_MS).decode(request)
    event = raw()[:-1] + b',"extra":' + nested + b"}"
    with pytest.raises(MalformedRecord, match="nested too deeply"):
        RecordCodec(BehaviorEvent, max_bytes=1 << 20).decode(event)
