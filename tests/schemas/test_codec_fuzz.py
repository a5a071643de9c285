"""Poison fuzzing of the codec: whatever the bytes, a record or the codec's own error.

10,000 events and 10,000 requests mutated from valid ones (tests/support/poison.py),
derandomized so a failure reproduces (``make fuzz``; ``make test`` runs the first 2,500
of each through ``STREAMREC_FUZZ_EXAMPLES``). A decode that raises anything but
:class:`InvalidRecord` would crash-loop every consumer of the topic.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings

from schemas.codec import RecordCodec, event_codec, request_codec
from schemas.errors import InvalidRecord
from tests.support.poison import NOW_MS, SKEW_MS, poisoned_events, poisoned_requests

# STREAMREC_FUZZ_EXAMPLES trades depth for time while working on a decoder.
FUZZ_EXAMPLES = int(os.environ.get("STREAMREC_FUZZ_EXAMPLES", "10000"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
KINDS = {"oversized", "malformed", "schema", "timestamp"}


def verdict(codec: RecordCodec[Any], raw: bytes) -> str:
    """'ok' with the record re-encoded and decoded unchanged, else the error kind."""
    try:
        record = codec.decode(raw)
    except InvalidRecord as exc:
        assert exc.kind in KINDS, exc
        assert str(exc), "an error without a reason"
        return exc.kind
    assert codec.decode(codec.encode(record)) == record  # what is accepted is well formed
    return "ok"


EVENTS = event_codec(clock=lambda: NOW_MS, max_future_skew_ms=SKEW_MS)
REQUESTS = request_codec(clock=lambda: NOW_MS, max_future_skew_ms=SKEW_MS)


@FUZZ
@given(poisoned_events())
def test_any_event_bytes_decode_or_raise_the_codecs_own_error(raw: bytes) -> None:
    verdict(EVENTS, raw)


@FUZZ
@given(poisoned_requests())
def test_any_request_bytes_decode_or_raise_the_codecs_own_error(raw: bytes) -> None:
    verdict(REQUESTS, raw)


def test_the_edges_fall_on_the_right_side() -> None:
    """A few of the fuzzer's cases, pinned: the limits are inclusive, one past is refused."""
    event = {"user_id": 1, "item_id": 2, "category_id": 3, "behavior": "pv"}
    encoded = {ts: msgspec.json.encode({**event, "ts": ts}) for ts in
               (NOW_MS + SKEW_MS, NOW_MS + SKEW_MS + 1)}  # fmt: skip
    assert verdict(EVENTS, encoded[NOW_MS + SKEW_MS]) == "ok"
    assert verdict(EVENTS, encoded[NOW_MS + SKEW_MS + 1]) == "timestamp"
    body = msgspec.json.encode({**event, "ts": NOW_MS})
    padded = body[:-1] + b',"pad":"' + b"x" * (1024 - len(body) - 9) + b'"}'
    assert len(padded) == 1024 and verdict(EVENTS, padded) == "ok"
    assert verdict(EVENTS, padded[:-2] + b'x"}') == "oversized"
    assert verdict(EVENTS, body[:-1] + b',"user_id":9007199254740992}') == "schema"
    assert verdict(REQUESTS, b'{"nest":' + b"[" * 30_000 + b"]" * 30_000 + b"}") == "malformed"
