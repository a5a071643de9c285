"""Configuration values inside Flink SQL text, quoted so none can change the statement.

Topic names, bootstrap servers, group ids and connector properties come from the
environment and end up inside the job's DDL and INSERTs. Written in bare, a value
with a ``'`` ends its literal and the rest is read as SQL (another option, a
statement); quoting them here makes every value exactly one token.
"""

from __future__ import annotations

from collections.abc import Mapping


def string_literal(value: str) -> str:
    """``value`` as a Flink SQL string literal: quoted, each ``'`` doubled.

    Flink (Calcite) reads a backslash in a plain literal as itself, so only the
    quote needs escaping.
    """
    return "'" + value.replace("'", "''") + "'"


def identifier(name: str) -> str:
    """``name`` as a quoted Flink SQL identifier: in backticks, each backtick doubled."""
    if not name or "\x00" in name:
        raise ValueError("an SQL identifier must be non-empty text without NUL")
    return "`" + name.replace("`", "``") + "`"


def with_options(options: Mapping[str, str]) -> str:
    """The body of a ``WITH (...)`` clause, every key and value a string literal."""
    return ",\n  ".join(
        f"{string_literal(key)} = {string_literal(value)}" for key, value in options.items()
    )
