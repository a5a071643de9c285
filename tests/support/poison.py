"""Poison inputs: valid records mutated at the places decoders get wrong (hypothesis).

A document is built as raw bytes, field by field, so that it can hold what no
JSON encoder writes: duplicate keys, NaN, invalid UTF-8, lone surrogates,
nesting tens of thousands deep, integers past 64 bits, sizes at a limit ±1.
Each strategy draws a valid record (from ``valid``) and applies one to three
mutations, or replaces the whole value (tombstones, empty, bare scalars).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from schemas.records import BEHAVIORS, MAX_EPOCH_MS, MAX_SAFE_INT, MIN_EPOCH_MS

# "Now" of every fuzzed decode, so that times at the skew limit are exact.
NOW_MS = 1_700_000_000_000
SKEW_MS = 300_000
MIB = 1024 * 1024

Fields = list[tuple[bytes, bytes]]

EDGE_INTS = [0, 1, -1, MAX_SAFE_INT, MAX_SAFE_INT + 1, MAX_SAFE_INT + 2, 2**63 - 1, 2**63,
             2**64, -(2**63), -(2**63) - 1, 10**30]  # fmt: skip
SPECIAL_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"1.0", b"1e3",
                   b"-0", b"0.5", b"01", b"+1", b"0x10", b"1_000"]  # fmt: skip
OTHER_TYPES = [b'"x"', b'"123"', b"true", b"false", b"null", b"[]", b"{}", b"[1]",
               b'{"a":1}', b'""']  # fmt: skip
BAD_STRINGS = [
    b'"\xff\xfe"',  # not UTF-8 at all
    b'"\xc3"',  # a truncated two-byte sequence
    b'"\xed\xa0\x80"',  # a surrogate encoded as UTF-8 (invalid)
    b'"\xf4\x90\x80\x80"',  # past U+10FFFF
    b'"\\ud800"',  # a lone high surrogate, escaped
    b'"\\udc00x"',  # a lone low surrogate, escaped
    b'"\\u00"',  # a broken escape
    b'"a\x00b"',  # a raw control character
    b'"\\u0000"',  # an escaped NUL (valid JSON)
]
WHOLE_VALUES = [b"", b" ", b"\n", b"null", b"[]", b"{}", b"0", b'"pv"', b"[{}]", b"{", b"}",
                b"\xef\xbb\xbf{}", b"\x00", b"{}{}", b"{} x"]  # fmt: skip


@dataclass(frozen=True)
class RecordShape:
    """Where a record's mutations aim: its integer, time and string fields, and its size."""

    ints: tuple[str, ...]
    times: tuple[str, ...]
    strings: tuple[str, ...]
    max_bytes: int
    others: tuple[str, ...] = ()  # lists and objects: their type is swapped
    event: str = ""  # a nested behaviour event, replaced by a poisoned one


EVENT_SHAPE = RecordShape(("user_id", "item_id", "category_id"), ("ts",), ("behavior",), 1024)
REQUEST_SHAPE = RecordShape(
    ("user_id", "k"), ("ts",), ("request_id",), 64 * 1024,
    others=("candidates", "context", "trigger"), event="trigger",
)  # fmt: skip


def valid_events() -> st.SearchStrategy[dict[str, Any]]:
    ids = st.integers(1, MAX_SAFE_INT)
    return st.fixed_dictionaries({
        "user_id": ids, "item_id": ids, "category_id": ids,
        "behavior": st.sampled_from(BEHAVIORS),
        "ts": st.integers(MIN_EPOCH_MS, NOW_MS + SKEW_MS),
    })  # fmt: skip


def valid_requests() -> st.SearchStrategy[dict[str, Any]]:
    def with_trigger(request: dict[str, Any], trigger: dict[str, Any] | None) -> dict[str, Any]:
        if trigger is not None:
            request["trigger"] = {**trigger, "user_id": request["user_id"]}
        return request

    request = st.fixed_dictionaries(
        {
            "request_id": st.from_regex(r"[A-Za-z0-9._:-]{1,40}", fullmatch=True),
            "user_id": st.integers(1, MAX_SAFE_INT),
            "ts": st.integers(MIN_EPOCH_MS, NOW_MS + SKEW_MS),
        },
        optional={
            "k": st.integers(1, 200),
            "candidates": st.lists(st.integers(1, MAX_SAFE_INT), max_size=50),
            "context": st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4),
        },
    )
    return st.builds(with_trigger, request, st.none() | valid_events())


def encode(fields: Fields) -> bytes:
    return b"{" + b",".join(key + b":" + value for key, value in fields) + b"}"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _key(name: str) -> bytes:
    return _json(name)


def _replace(fields: Fields, name: str, value: bytes) -> Fields:
    key = _key(name)
    present = [(k, value if k == key else v) for k, v in fields]
    return present if any(k == key for k, _ in fields) else [*fields, (key, value)]


Mutation = Callable[[Fields], Fields]


@st.composite
def _mutation(draw: st.DrawFn, shape: RecordShape) -> Mutation:
    numeric = shape.ints + shape.times
    every = numeric + shape.strings
    kinds = ["type", "edge_int", "time_edge", "special_number", "duplicate", "bad_string",
             "deep", "size", "drop", "unknown", "truncate", "flip"]  # fmt: skip
    kind = draw(st.sampled_from(kinds + (["event"] if shape.event else [])))
    if kind == "type":
        name = draw(st.sampled_from(every + shape.others))
        value = draw(st.sampled_from(OTHER_TYPES))
        return lambda f: _replace(f, name, value)
    if kind == "event":
        event = draw(poisoned(valid_events(), EVENT_SHAPE))
        return lambda f: _replace(f, shape.event, event)
    if kind == "edge_int":
        name, number = draw(st.sampled_from(numeric)), draw(st.sampled_from(EDGE_INTS))
        return lambda f: _replace(f, name, _json(number))
    if kind == "time_edge":
        edges = [NOW_MS + SKEW_MS - 1, NOW_MS + SKEW_MS, NOW_MS + SKEW_MS + 1,
                 MIN_EPOCH_MS - 1, MIN_EPOCH_MS, MAX_EPOCH_MS, MAX_EPOCH_MS + 1]  # fmt: skip
        name, ts = draw(st.sampled_from(shape.times)), draw(st.sampled_from(edges))
        return lambda f: _replace(f, name, _json(ts))
    if kind == "special_number":
        name, raw = draw(st.sampled_from(numeric)), draw(st.sampled_from(SPECIAL_NUMBERS))
        return lambda f: _replace(f, name, raw)
    if kind == "duplicate":
        name = draw(st.sampled_from(every))
        again = draw(st.sampled_from([*OTHER_TYPES, b"1", b"2", b'"pv"', b'"buy"']))
        return lambda f: [*f, (_key(name), again)]
    if kind == "bad_string":
        where = draw(st.sampled_from([*shape.strings, "extra"]))
        raw = draw(st.sampled_from(BAD_STRINGS))
        return lambda f: _replace(f, where, raw)
    if kind == "deep":
        depth = draw(st.integers(2_000, 30_000))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        closed = draw(st.booleans())
        nested = opener * depth + b"0" + (closer * depth if closed else b"")
        return lambda f: [(b'"nest"', nested), *f]
    if kind == "size":
        target = draw(st.sampled_from([shape.max_bytes - 1, shape.max_bytes,
                                       shape.max_bytes + 1, MIB - 1, MIB + 1]))  # fmt: skip

        def pad(f: Fields) -> Fields:
            room = target - len(encode([*f, (b'"pad"', b'""')]))
            return [*f, (b'"pad"', b'"' + b"x" * max(0, room) + b'"')]

        return pad
    if kind == "drop":
        name = draw(st.sampled_from(every))
        return lambda f: [(k, v) for k, v in f if k != _key(name)]
    if kind == "unknown":
        value = draw(st.sampled_from([*OTHER_TYPES, *SPECIAL_NUMBERS[:3], *BAD_STRINGS]))
        return lambda f: [*f, (b'"extra"', value)]
    if kind == "truncate":
        cut = draw(st.integers(0, 400))
        return lambda f: [(b"", encode(f)[:cut])]
    position, byte = draw(st.integers(0, 400)), draw(st.integers(0, 255))

    def flip(f: Fields) -> Fields:
        raw = bytearray(encode(f))
        raw[position % len(raw)] = byte
        return [(b"", bytes(raw))]

    return flip


def _apply(fields: Fields, mutations: list[Mutation]) -> bytes:
    for mutate in mutations:
        if len(fields) == 1 and fields[0][0] == b"":  # already raw bytes (cut or flipped)
            break
        fields = mutate(fields)
    if len(fields) == 1 and fields[0][0] == b"":
        return fields[0][1]
    return encode(fields)


@st.composite
def poisoned(
    draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]], shape: RecordShape
) -> bytes:
    """A valid record's bytes with one to three mutations, or a whole-value oddity."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(WHOLE_VALUES))
    record = draw(valid)
    fields = [(_key(name), _json(value)) for name, value in record.items()]
    mutations = draw(st.lists(_mutation(shape), min_size=1, max_size=3))
    return _apply(fields, mutations)


def poisoned_events() -> st.SearchStrategy[bytes]:
    return poisoned(valid_events(), EVENT_SHAPE)


def poisoned_requests() -> st.SearchStrategy[bytes]:
    return poisoned(valid_requests(), REQUEST_SHAPE)


def sample(strategy: st.SearchStrategy[bytes], n: int, largest: int = 0) -> list[bytes]:
    """``n`` examples of ``strategy``, the same on every run (for integration fuzzing,
    where the inputs go to a running service in one batch, not one test call each).
    ``largest`` > 0 leaves out bigger inputs (Kafka's producer refuses them)."""
    drawn: list[bytes] = []

    @settings(max_examples=n, derandomize=True, database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def collect(raw: bytes) -> None:
        if not largest or len(raw) <= largest:
            drawn.append(raw)

    collect()
    return drawn
