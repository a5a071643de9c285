"""The changelog decoder: every variant, and every rule of RecordCodec."""

from __future__ import annotations

import msgspec
import pytest

from schemas.codec import RecordCodec, feature_update_codec
from schemas.errors import (
    ImplausibleTimestamp,
    MalformedRecord,
    OversizedRecord,
    SchemaViolation,
)
from schemas.features import FeatureUpdate
from tests.jobs.feature_writer.samples import T0, category_window, item_window, recent, user_window

NOW_MS = T0 + 1000
SAMPLES: list[FeatureUpdate] = [recent(), user_window(), item_window(), category_window()]


def codec() -> RecordCodec[FeatureUpdate]:
    return feature_update_codec(clock=lambda: NOW_MS)


@pytest.mark.parametrize("update", SAMPLES, ids=lambda u: type(u).__name__)
def test_decodes_every_variant(update: FeatureUpdate) -> None:
    assert codec().decode(msgspec.json.encode(update)) == update


def test_malformed_json() -> None:
    with pytest.raises(MalformedRecord):
        codec().decode(b'{"view": "user_recent", ')


@pytest.mark.parametrize(
    "payload",
    [
        b'{"view": "nope", "user_id": 1}',
        b'{"view": "user_recent", "user_id": 0, "latest_ts": 1700000000000, "events": []}',
        b'{"view": "item_window", "item_id": 1}',
    ],
)
def test_schema_violations_name_the_union(payload: bytes) -> None:
    with pytest.raises(SchemaViolation, match=r"UserRecentEvents \| UserWindow"):
        codec().decode(payload)


def test_oversized_refused_before_parsing() -> None:
    with pytest.raises(OversizedRecord):
        feature_update_codec(max_bytes=10).decode(b"x" * 11)


@pytest.mark.parametrize("update", SAMPLES, ids=lambda u: type(u).__name__)
def test_future_event_time_refused(update: FeatureUpdate) -> None:
    late = feature_update_codec(clock=lambda: T0 - 2 * 3_600_000)
    with pytest.raises(ImplausibleTimestamp, match=r"latest_ts|window_end"):
        late.decode(msgspec.json.encode(update))
