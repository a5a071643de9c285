"""``name=value,...`` properties: escapes for commas, errors that quote nothing, masking."""

from __future__ import annotations

import pytest

from runtime.kafka import KafkaSettings
from runtime.settings import (
    PropertiesFormatError,
    SettingsError,
    mask_properties,
    parse_properties,
    secret_texts,
)


def test_an_escaped_comma_and_backslash_stay_in_the_value() -> None:
    text = r"sasl.password=a\,b\\,client.id=c\d"
    assert parse_properties(text) == {"sasl.password": "a,b\\", "client.id": "c\\d"}
    assert parse_properties("a=1, b = x=y ,,") == {"a": "1", "b": "x=y"}


@pytest.mark.parametrize(
    ("text", "position"),
    [("sasl.password=ok,hunter2secret", "entry 2"), ("=hunter2secret", "entry 1")],
)
def test_a_malformed_entry_is_named_by_position_not_quoted(text: str, position: str) -> None:
    with pytest.raises(PropertiesFormatError, match=position) as raised:
        parse_properties(text)
    assert "hunter2" not in str(raised.value)


def test_a_lone_trailing_backslash_is_refused_without_the_text() -> None:
    with pytest.raises(PropertiesFormatError, match="lone backslash") as raised:
        parse_properties("sasl.password=hunter2\\")
    assert "hunter2" not in str(raised.value)


def test_the_secret_variables_error_says_where_but_not_what() -> None:
    with pytest.raises(SettingsError, match=r"STREAMREC_KAFKA_CONFIG.*entry 2") as raised:
        KafkaSettings.load({"STREAMREC_KAFKA_CONFIG": "sasl.password=x,hunter2secret"})
    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in repr(raised.value.__cause__) + repr(raised.value.__context__)


@pytest.mark.parametrize(
    "name",
    [
        "sasl.jaas.config",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.client.secret",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "ssl.truststore.password",
        "basic.auth.user.info",
        "sasl.oauthbearer.assertion.private.key.pem",
        "https.credentials",
    ],
)
def test_every_credential_property_is_masked(name: str) -> None:
    assert mask_properties({name: "v", "client.id": "c"}) == {name: "***", "client.id": "c"}


def test_secret_texts_are_what_the_masker_hides() -> None:
    assert secret_texts({"sasl.password": "pw", "client.id": "c"}) == {"pw"}
    assert secret_texts("redis://u:p%40ss@h:1/0") == {"p%40ss", "p@ss"}
    assert secret_texts("redis://h:1/0") == set()
    assert secret_texts("a-token") == {"a-token"}
