"""Per-run overrides of a published config.pbtxt's top-level fields, standard library only.

The GPU serving benchmark runs on a host with torch and protobuf but without
tritonclient, whose ModelConfig message `inference.serving.repository` parses
config.pbtxt with. So the overrides work on the text: the file is split into its
top-level statements (`name: value`, `name { ... }`, `name [ ... ]`), the ones a
run sets are dropped, and the run's own are appended. A test parses the result
with protobuf and checks every field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAME = re.compile(r"[A-Za-z_]\w*")
_SCALAR = re.compile(r"[^\s#,;]+")
_KEY = re.compile(r'key\s*:\s*"([^"]*)"')
_CLOSERS = {"{": "}", "[": "]"}


def _skip(text: str, i: int) -> int:
    """Past whitespace, comments and the optional separators between fields."""
    while i < len(text):
        if text[i] in " \t\r\n,;":
            i += 1
        elif text[i] == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        else:
            break
    return i


def _string_end(text: str, i: int) -> int:
    quote, i = text[i], i + 1
    while text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _block_end(text: str, i: int) -> int:
    """Past the bracket or brace at `i` and everything up to its match."""
    stack = [_CLOSERS[text[i]]]
    i += 1
    while stack:
        char = text[i]
        if char in "\"'":
            i = _string_end(text, i)
            continue
        if char == "#":
            i = _skip(text, i)
            continue
        if char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char == stack[-1]:
            stack.pop()
        i += 1
    return i


def statements(text: str) -> list[tuple[str, str]]:
    """(field name, statement text) of every top-level field, in order; comments dropped."""
    found = []
    i = _skip(text, 0)
    while i < len(text):
        name = _NAME.match(text, i)
        if name is None:
            raise ValueError(f"config.pbtxt: expected a field name at {text[i : i + 30]!r}")
        j = _skip(text, name.end())
        if text[j] == ":":
            j = _skip(text, j + 1)
        if text[j] in _CLOSERS:
            j = _block_end(text, j)
        elif text[j] in "\"'":
            j = _string_end(text, j)
        else:
            scalar = _SCALAR.match(text, j)
            assert scalar is not None  # _skip stopped on a character _SCALAR takes
            j = scalar.end()
        found.append((name.group(), text[i:j]))
        i = _skip(text, j)
    return found


def override(text: str, fields: Mapping[str, str], parameters: Mapping[str, str]) -> str:
    """`text` with each of `fields` (name -> its new statement) and `parameters` replaced."""
    kept = []
    for name, statement in statements(text):
        key = _KEY.search(statement) if name == "parameters" else None
        if name in fields or (key is not None and key.group(1) in parameters):
            continue
        kept.append(statement)
    kept += fields.values()
    kept += [
        f'parameters: {{ key: "{key}" value: {{ string_value: "{value}" }} }}'
        for key, value in parameters.items()
    ]
    return "\n".join(kept) + "\n"
