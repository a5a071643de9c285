"""Fast decoders and encoders for the records, with the checks the types cannot express.

A :class:`RecordCodec` refuses, in this order: too many bytes (before parsing, so
a huge message costs nothing), bytes that are not JSON, JSON that breaks the
type's schema, fields that contradict each other (``checks``), and event times
too far ahead of the wall clock.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, get_args

import msgspec

from schemas.errors import (
    ImplausibleTimestamp,
    InvalidRecord,
    MalformedRecord,
    OversizedRecord,
    SchemaViolation,
)
from schemas.features import FeatureUpdate
from schemas.records import (
    BehaviorEvent,
    DeadLetter,
    DriftAlert,
    Recommendation,
    RecRequest,
)

T = TypeVar("T")
# Reads any JSON value only to see that it is one: floats stay text, so one out of a
# double's range (1e400) does not end the read before a syntax error after it.
_WELL_FORMED = msgspec.json.Decoder(float_hook=str)

KIB = 1024
# Producers' clocks drift; an hour of slack keeps honest ones out of the
# dead-letter topic while a day-ahead or year-ahead time is still refused.
DEFAULT_MAX_FUTURE_SKEW_MS = 3_600_000


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class RecordCodec(Generic[T]):
    """Decode and validate one record type; encode it back to compact JSON.

    ``time_fields`` (dotted for nested records: ``trigger.ts``) are checked
    against ``clock`` so that a record cannot claim to come from more than
    ``max_future_skew_ms`` in the future. Each of ``checks`` returns what is
    wrong with a decoded record, or None; a message refuses it.
    """

    record_type: Any  # a Struct type, or a union of tagged Struct types
    max_bytes: int
    time_fields: tuple[str, ...] = ()
    max_future_skew_ms: int = DEFAULT_MAX_FUTURE_SKEW_MS
    clock: Callable[[], int] = wall_clock_ms
    checks: tuple[Callable[[T], str | None], ...] = ()
    _decoder: msgspec.json.Decoder[T] = field(init=False, repr=False, compare=False)
    _encoder: msgspec.json.Encoder = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_decoder", msgspec.json.Decoder(self.record_type))
        object.__setattr__(self, "_encoder", msgspec.json.Encoder())

    @property
    def name(self) -> str:
        """The record type's name for error texts (``A | B`` for a union)."""
        name = getattr(self.record_type, "__name__", None)
        return name or " | ".join(t.__name__ for t in get_args(self.record_type))

    def decode(self, raw: bytes | memoryview) -> T:
        """Return the record in ``raw`` or raise an :class:`InvalidRecord` subclass."""
        if len(raw) > self.max_bytes:
            raise OversizedRecord(
                f"{self.name} of {len(raw)} bytes exceeds the {self.max_bytes}-byte limit"
            )
        try:
            # JSON is UTF-8 (RFC 8259). msgspec checks only the strings it decodes and
            # passes invalid bytes in an unknown field; checking the whole value makes
            # the verdict not depend on which fields a consumer knows (the feature
            # job's Java parser checks the same way).
            codecs.utf_8_decode(raw, "strict", True)
        except UnicodeDecodeError as exc:
            raise MalformedRecord(f"not valid JSON: not UTF-8 at byte {exc.start}") from None
        try:
            record = self._decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise self._schema_or_malformed(raw, exc) from None
        except msgspec.DecodeError as exc:
            raise MalformedRecord(f"not valid JSON: {exc}") from None
        except RecursionError:
            # Nesting deeper than the interpreter's recursion limit (a few kilobytes of
            # brackets in an unknown field): bad input, not a reason to crash-loop.
            raise MalformedRecord(f"{self.name}: JSON nested too deeply to decode") from None
        for check in self.checks:
            if (problem := check(record)) is not None:
                raise SchemaViolation(f"{self.name}: {problem}")
        if self.time_fields:
            self._check_times(record)
        return record

    def _schema_or_malformed(self, raw: bytes | memoryview, error: Exception) -> InvalidRecord:
        """Malformed if the value is not JSON at all, else the schema error.

        msgspec stops at the first field of a wrong type, so a syntax error after it
        would read as a schema error; reading the value once more, untyped, makes the
        kind not depend on where in the document the two are (nor on the parser: the
        feature job's Java parser reads the whole document first). Only refused
        records pay for the second read.
        """
        try:
            _WELL_FORMED.decode(raw)
        except msgspec.DecodeError as exc:
            return MalformedRecord(f"not valid JSON: {exc}")
        except RecursionError:
            return MalformedRecord(f"{self.name}: JSON nested too deeply to decode")
        return SchemaViolation(f"{self.name}: {error}")

    def _check_times(self, record: T) -> None:
        limit = self.clock() + self.max_future_skew_ms
        # A union's variants need not all have every time field.
        for name in self.time_fields:
            value: Any = record
            for part in name.split("."):
                value = getattr(value, part, None)
            if value is not None and value > limit:
                ahead_s = (value - limit + self.max_future_skew_ms) / 1000
                raise ImplausibleTimestamp(
                    f"{name}={value} is {ahead_s:.0f} s ahead of the consumer's clock "
                    f"(at most {self.max_future_skew_ms // 1000} s allowed)"
                )

    def encode(self, record: T) -> bytes:
        return self._encoder.encode(record)

    def encode_into(self, record: T, buffer: bytearray) -> None:
        """Encode into a reused buffer: the replay hot path avoids one allocation per event."""
        self._encoder.encode_into(record, buffer)

    def to_builtins(self, record: T) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.to_builtins(record)
        return result


def event_codec(**overrides: Any) -> RecordCodec[BehaviorEvent]:
    """Behaviour events: small and many, so the byte limit is tight."""
    return RecordCodec(BehaviorEvent, max_bytes=KIB, time_fields=("ts",), **overrides)


def trigger_of_same_user(request: RecRequest) -> str | None:
    """A trigger event is the requesting user's own: another user's click is a caller bug."""
    trigger = request.trigger
    if trigger is not None and trigger.user_id != request.user_id:
        return f"trigger.user_id={trigger.user_id} differs from user_id={request.user_id}"
    return None


def request_codec(**overrides: Any) -> RecordCodec[RecRequest]:
    """Requests may carry up to 1,000 candidate ids."""
    settings: dict[str, Any] = {"checks": (trigger_of_same_user,)} | overrides
    return RecordCodec(RecRequest, max_bytes=64 * KIB, time_fields=("ts", "trigger.ts"), **settings)


def recommendation_codec(**overrides: Any) -> RecordCodec[Recommendation]:
    return RecordCodec(
        Recommendation, max_bytes=256 * KIB, time_fields=("produced_at",), **overrides
    )


def drift_codec(**overrides: Any) -> RecordCodec[DriftAlert]:
    return RecordCodec(DriftAlert, max_bytes=1024 * KIB, time_fields=("checked_at",), **overrides)


def dead_letter_codec(**overrides: Any) -> RecordCodec[DeadLetter]:
    # Base64 grows the original by a third; the broker's own limit is the real bound.
    return RecordCodec(DeadLetter, max_bytes=8 * 1024 * KIB, **overrides)


# A category's top items or a user's window may carry a few hundred packed strings.
FEATURE_UPDATE_MAX_BYTES = 256 * KIB


def feature_update_codec(**overrides: Any) -> RecordCodec[FeatureUpdate]:
    """The ``feature-updates`` changelog: the tagged union of :mod:`schemas.features`."""
    settings: dict[str, Any] = {"max_bytes": FEATURE_UPDATE_MAX_BYTES} | overrides
    return RecordCodec(FeatureUpdate, time_fields=("latest_ts", "window_end"), **settings)
