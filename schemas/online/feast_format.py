"""Feast 0.67's Redis online-store format, byte for byte, as pure functions.

What ``feast.infra.online_stores.redis.RedisOnlineStore`` reads and writes:

* one Redis hash per entity and project, at key
  ``serialize_entity_key(entity, version=3) + project`` (feature views that share
  an entity share the hash);
* in it, per feature, the field ``mmh3_32("<view>:<feature>")`` as 4 little-endian
  bytes, holding a serialized ``feast.types.Value`` protobuf;
* per view, the field ``_ts:<view>`` holding a serialized
  ``google.protobuf.Timestamp`` of the row's event time.

Feast writes a row only when its event time is strictly newer than the stored
``_ts:<view>`` (a stored zero or missing timestamp counts as absent), and sets an
EXPIRE on the whole hash only when ``key_ttl_seconds`` is configured.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import mmh3

# No stubs for google.protobuf in this environment (types-protobuf would add them).
from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped]

from schemas.online.feast_protos import DoubleList, Int64List, StringList, ValueProto
from schemas.views import FeatureKind, ViewSpec

ENTITY_KEY_SERIALIZATION_VERSION = 3
# feast.types.Value.ValueType enum numbers used inside serialized entity keys.
_VALUE_TYPE_STRING = 2
_VALUE_TYPE_INT64 = 4


_LIST_TYPES: dict[FeatureKind, Any] = {
    FeatureKind.INT64_LIST: Int64List,
    FeatureKind.DOUBLE_LIST: DoubleList,
    FeatureKind.STRING_LIST: StringList,
}

# Protobuf tag byte of each list field in Value: field number << 3 | 2 (length-delimited).
_LIST_TAGS: dict[FeatureKind, bytes] = {
    kind: bytes([ValueProto.DESCRIPTOR.fields_by_name[kind.value].number << 3 | 2])
    for kind in _LIST_TYPES
}


@dataclass(frozen=True)
class RowLayout:
    """Where a view's rows live in Redis: the entity key prefix, ``_ts`` field, feature fields."""

    view: ViewSpec
    key_prefix: bytes
    ts_field: bytes
    field_hashes: dict[str, bytes]

    def redis_key(self, entity_id: int, project: str) -> bytes:
        return self.key_prefix + struct.pack("<q", entity_id) + project.encode()


@functools.cache
def layout(view: ViewSpec) -> RowLayout:
    """The Redis layout of a view, computed once per view."""
    hashes = {f.name: field_hash(view.name, f.name) for f in view.features}
    return RowLayout(view, entity_key_prefix(view.join_key), ts_field(view.name), hashes)


class FeatureRow(NamedTuple):
    """One online row. ``values`` are Python values; rows from the writer's vectorised
    path carry ``encoded`` instead: the serialized Values in the view's feature order."""

    view: ViewSpec
    entity_id: int
    event_ns: int
    values: dict[str, Any] | None
    encoded: list[bytes] | None = None

    def decoded(self) -> dict[str, Any]:
        """The Python values, decoded from ``encoded`` if that is what the row carries."""
        if self.values is not None:
            return self.values
        encoded = self.encoded or []
        return dict(zip(self.view.feature_names, map(decode_value, encoded), strict=True))


def entity_key_prefix(join_key: str) -> bytes:
    """``serialize_entity_key`` (v3) of a one-key Int64 entity, up to the value bytes.

    Layout: key count, then per key (type STRING, length, utf-8 name), then per
    value (type INT64, length 8); the value itself follows as ``<q``.
    """
    name = join_key.encode()
    return (
        struct.pack("<III", 1, _VALUE_TYPE_STRING, len(name))
        + name
        + struct.pack("<II", _VALUE_TYPE_INT64, 8)
    )


def redis_key(join_key: str, entity_id: int, project: str) -> bytes:
    """The Redis key of an Int64 entity's hash: serialized entity key + project."""
    return entity_key_prefix(join_key) + struct.pack("<q", entity_id) + project.encode()


def field_hash(view: str, feature: str) -> bytes:
    """Feast's ``_mmh3``: unsigned murmur3-32 (seed 0) of ``view:feature``, little-endian."""
    return struct.pack("<I", mmh3.hash(f"{view}:{feature}", signed=False))


def ts_field(view: str) -> bytes:
    return f"_ts:{view}".encode()


def encode_timestamp(epoch_ns: int) -> bytes:
    """A serialized protobuf ``Timestamp``, as Feast builds it from the event datetime."""
    seconds, nanos = divmod(epoch_ns, 1_000_000_000)
    data: bytes = Timestamp(seconds=seconds, nanos=nanos).SerializeToString()
    return data


def decode_timestamp_ns(raw: bytes | None) -> int | None:
    """Nanoseconds since the epoch of a stored ``_ts`` field; None when absent or zero."""
    if not raw:
        return None
    stamp = Timestamp()
    stamp.ParseFromString(raw)
    total: int = stamp.seconds * 1_000_000_000 + stamp.nanos
    # Feast treats a zero (or unset) stored timestamp as "no row yet".
    return total if total > 0 else None


def encode_value(kind: FeatureKind, value: Any) -> bytes:
    """A serialized ``feast.types.Value`` holding ``value`` in the ``kind`` oneof field."""
    list_type = _LIST_TYPES.get(kind)
    if list_type is None:
        data: bytes = ValueProto(**{kind.value: value}).SerializeToString()
        return data
    # Same bytes as ValueProto(kind=list_type(val=value)), without building the
    # outer message: the field's tag, the inner message's length, the inner message.
    inner: bytes = list_type(val=value).SerializeToString()
    return _LIST_TAGS[kind] + varint(len(inner)) + inner


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_value(raw: bytes | None) -> Any:
    """The Python value of a serialized ``Value``: int, float, str, list, or None if unset."""
    return stored_value(raw)[1]


def stored_value(raw: bytes | None) -> tuple[str | None, Any]:
    """The ``Value`` oneof field a serialized value is stored in, and its Python value;
    ``(None, None)`` if unset."""
    if raw is None:
        return None, None
    proto = ValueProto()
    proto.ParseFromString(raw)
    which = proto.WhichOneof("val")
    if which is None or which == "null_val":
        return None, None
    value = getattr(proto, which)
    return which, list(value.val) if hasattr(value, "val") else value


def encode_row(spec: ViewSpec, values: Mapping[str, Any]) -> list[bytes]:
    """Alternating ``field, value`` bytes of one row, in the view's feature order."""
    out: list[bytes] = []
    hashes = layout(spec).field_hashes
    for feature in spec.features:
        out.append(hashes[feature.name])
        out.append(encode_value(feature.kind, values[feature.name]))
    return out


def decode_row(
    spec: ViewSpec, features: Sequence[str], raw: Sequence[bytes | None]
) -> dict[str, Any]:
    """``{feature: value}`` from the HMGET reply for ``features`` (in that order)."""
    return {name: decode_value(value) for name, value in zip(features, raw, strict=True)}
