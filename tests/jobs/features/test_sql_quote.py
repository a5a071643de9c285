"""Configuration values stay one SQL token each, whatever quotes they hold."""

from __future__ import annotations

import re

import pytest

from jobs.features.dead_letter_sql import dead_letter_insert
from jobs.features.settings import FeatureJobSettings
from jobs.features.sql import changelog_ddl, source_ddl
from jobs.features.sql_quote import identifier, string_literal, with_options

ESCAPE = "x', 'properties.security.protocol' = 'PLAINTEXT"
# A literal: quote, then any run of non-quotes or doubled quotes, then quote.
LITERAL = r"'(?:[^']|'')*'"


def unquote(literal: str) -> str:
    assert re.fullmatch(LITERAL, literal, re.DOTALL), literal
    return literal[1:-1].replace("''", "'")


def test_string_literals_double_their_quotes() -> None:
    assert string_literal("it's") == "'it''s'"
    assert unquote(string_literal(ESCAPE)) == ESCAPE
    assert string_literal("a\\b") == "'a\\b'"  # Flink reads the backslash as itself


def test_identifiers_are_backticked_with_backticks_doubled() -> None:
    assert identifier("user_window_sink") == "`user_window_sink`"
    assert identifier("a`b") == "`a``b`"
    with pytest.raises(ValueError):
        identifier("")


def test_a_quote_in_a_setting_cannot_add_a_connector_option() -> None:
    settings = FeatureJobSettings(
        source_topic=ESCAPE,
        bootstrap_servers=ESCAPE,
        kafka_java_properties={"client.dns.lookup": ESCAPE},
        group_id=ESCAPE,
    )
    options_body = source_ddl(settings).split(") WITH (", 1)[1].rsplit(")", 1)[0]
    pairs = [line.strip().rstrip(",") for line in options_body.strip().split(",\n")]
    parsed = {}
    for pair in pairs:
        key, value = re.fullmatch(rf"({LITERAL}) = ({LITERAL})", pair, re.DOTALL).groups()  # type: ignore[union-attr]
        parsed[unquote(key)] = unquote(value)
    assert parsed["topic"] == ESCAPE
    assert parsed["properties.bootstrap.servers"] == ESCAPE
    assert parsed["properties.client.dns.lookup"] == ESCAPE
    assert parsed["properties.group.id"] == ESCAPE
    assert "properties.security.protocol" not in parsed
    assert with_options({"k'": "v"}) == "'k''' = 'v'"


def test_the_dead_letter_consumer_name_stays_inside_its_literal() -> None:
    insert = dead_letter_insert(FeatureJobSettings(group_id="g', 'x' VALUE 'y"))
    assert "'consumer' VALUE 'g'', ''x'' VALUE ''y'," in insert


def test_sink_table_names_are_quoted_identifiers() -> None:
    assert changelog_ddl(FeatureJobSettings(), "odd`name", "a INT").startswith(
        "CREATE TEMPORARY TABLE `odd``name` ("
    )
