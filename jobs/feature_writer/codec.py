"""Decoder of the ``feature-updates`` changelog: the tagged union, with the usual checks.

:class:`schemas.codec.RecordCodec` is written for one Struct type: it names the
type in its errors through ``__name__`` and checks time fields every variant
must have, neither of which a union offers. :class:`FeatureUpdateCodec` keeps
its interface (so ``RecordConsumer`` and the dead-letter router take it as is)
and applies the same rules in the same order: size, JSON, schema, future time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from schemas.codec import DEFAULT_MAX_FUTURE_SKEW_MS, KIB, RecordCodec
from schemas.errors import ImplausibleTimestamp, MalformedRecord, OversizedRecord, SchemaViolation
from schemas.features import FeatureUpdate, UserRecentEvents

# A category's top items or a user's window may carry a few hundred packed strings.
FEATURE_UPDATE_MAX_BYTES = 256 * KIB
_NAME = "FeatureUpdate"


def event_time(update: FeatureUpdate) -> int:
    """The time a row is stamped with in the online store."""
    if isinstance(update, UserRecentEvents):
        return update.latest_ts
    return update.window_end


@dataclass(frozen=True)
class FeatureUpdateCodec(RecordCodec[Any]):
    """Decode and validate one changelog record into its :data:`FeatureUpdate` variant."""

    record_type: Any = FeatureUpdate
    max_bytes: int = FEATURE_UPDATE_MAX_BYTES
    max_future_skew_ms: int = DEFAULT_MAX_FUTURE_SKEW_MS
    _union_decoder: msgspec.json.Decoder[FeatureUpdate] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "_union_decoder", msgspec.json.Decoder(FeatureUpdate))

    def decode(self, raw: bytes | memoryview) -> FeatureUpdate:
        """Return the update in ``raw`` or raise an :class:`InvalidRecord` subclass."""
        if len(raw) > self.max_bytes:
            raise OversizedRecord(
                f"{_NAME} of {len(raw)} bytes exceeds the {self.max_bytes}-byte limit"
            )
        try:
            update = self._union_decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise SchemaViolation(f"{_NAME}: {exc}") from None
        except msgspec.DecodeError as exc:
            raise MalformedRecord(f"not valid JSON: {exc}") from None
        self._check_event_time(update)
        return update

    def _check_event_time(self, update: FeatureUpdate) -> None:
        limit = self.clock() + self.max_future_skew_ms
        value = event_time(update)
        if value > limit:
            ahead_s = (value - limit + self.max_future_skew_ms) / 1000
            name = "latest_ts" if isinstance(update, UserRecentEvents) else "window_end"
            raise ImplausibleTimestamp(
                f"{name}={value} is {ahead_s:.0f} s ahead of the consumer's clock "
                f"(at most {self.max_future_skew_ms // 1000} s allowed)"
            )
