"""The Java client's properties derived from the librdkafka ones (the Flink connector's)."""

from __future__ import annotations

import pytest

from jobs.features.settings import FeatureJobSettings
from jobs.features.sql import kafka_options
from runtime.kafka_java import (
    PLAIN_MODULE,
    SCRAM_MODULE,
    KafkaJavaConfigError,
    connector_properties,
    jaas_quoted,
    java_properties,
)

SECRET = 'pa"ss\\wo,rd'


def jaas_unquote(token: str) -> str:
    """What java.io.StreamTokenizer reads from a "-quoted token (the escapes Kafka honours)."""
    assert token[0] == token[-1] == '"'
    out, chars = [], iter(token[1:-1])
    for char in chars:
        if char == '"':
            raise AssertionError("an unescaped quote ends the token early")
        out.append(next(chars) if char == "\\" else char)
    return "".join(out)


def test_scram_credentials_become_a_jaas_config() -> None:
    java = java_properties(
        {
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "feature-job",
            "sasl.password": "s3cret",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
            "client.id": "features",
            "linger.ms": "5",
        }
    )
    assert java == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM_MODULE} required username="feature-job" password="s3cret";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "",
        "client.id": "features",
    }


def test_plain_uses_the_plain_login_module() -> None:
    java = java_properties({"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"})
    assert java["sasl.jaas.config"].startswith(PLAIN_MODULE + " required ")
    assert java_properties({"ssl.endpoint.identification.algorithm": "https"}) == {
        "ssl.endpoint.identification.algorithm": "https"
    }


def test_quotes_and_backslashes_cannot_end_the_jaas_token() -> None:
    java = java_properties(
        {"sasl.mechanism": "PLAIN", "sasl.username": 'u"x', "sasl.password": SECRET}
    )
    config = java["sasl.jaas.config"]
    password = config.split(" password=", 1)[1].removesuffix(";")
    assert jaas_unquote(password) == SECRET
    assert jaas_unquote(jaas_quoted("a\\", "x")) == "a\\"
    assert " password=" not in jaas_unquote(config.split(" username=", 1)[1].split(" ")[0])


@pytest.mark.parametrize("bad", ["line\nbreak", "cr\rhere", "nul\x00", "tab\there"])
def test_control_characters_are_refused_without_echoing_the_value(bad: str) -> None:
    with pytest.raises(KafkaJavaConfigError, match=r"sasl\.password") as raised:
        java_properties({"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": bad})
    assert bad not in str(raised.value)


@pytest.mark.parametrize(
    ("librdkafka", "named"),
    [
        ({"sasl.oauthbearer.config": "secretvalue"}, "sasl.oauthbearer.config"),
        ({"ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem"}, "ssl.key"),
        ({"ssl.key.password": "secretvalue"}, "ssl.key.password"),
        ({"sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER"),
        ({"sasl.mechanism": "GSSAPI"}, "GSSAPI"),
        ({"sasl.username": "u", "sasl.password": "secretvalue"}, "need sasl.mechanism"),
        ({"sasl.mechanism": "PLAIN", "sasl.password": "secretvalue"}, "go together"),
        ({"sasl.mechanism": "PLAIN", "sasl.mechanisms": "SCRAM-SHA-256"}, "disagree"),
        ({"security.protocol": "TLS"}, "security.protocol"),
        ({"ssl.endpoint.identification.algorithm": "maybe"}, "none or https"),
    ],
)
def test_untranslatable_security_settings_are_refused_by_name(
    librdkafka: dict[str, str], named: str
) -> None:
    with pytest.raises(KafkaJavaConfigError, match=named) as raised:
        java_properties(librdkafka)
    assert "secretvalue" not in str(raised.value)


def test_java_only_properties_win_and_take_over_what_cannot_be_derived() -> None:
    librdkafka = {
        "security.protocol": "SSL",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
        "ssl.ca.location": "/ca.pem",
    }
    java_only = {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/both.pem"}
    assert connector_properties(librdkafka, java_only) == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/both.pem",
    }
    with pytest.raises(KafkaJavaConfigError):
        connector_properties(librdkafka, {"linger.ms": "5"})


def test_the_feature_job_connector_gets_the_java_properties() -> None:
    settings = FeatureJobSettings.load(
        {
            "STREAMREC_KAFKA_CONFIG": "security.protocol=SASL_SSL,sasl.mechanism=SCRAM-SHA-256,"
            "sasl.username=u,sasl.password=pw,queue.buffering.max.ms=5",
            "STREAMREC_KAFKA_JAVA_CONFIG": "client.dns.lookup=use_all_dns_ips",
        }
    )
    options = kafka_options(settings, "t")
    assert options["properties.sasl.jaas.config"].endswith('password="pw";')
    assert options["properties.client.dns.lookup"] == "use_all_dns_ips"
    assert "properties.sasl.password" not in options
    assert "properties.queue.buffering.max.ms" not in options


def test_the_feature_job_refuses_untranslatable_settings_at_load() -> None:
    with pytest.raises(ValueError, match=r"sasl\.oauthbearer\.config"):
        FeatureJobSettings(kafka_properties={"sasl.oauthbearer.config": "x"})


def test_a_shaded_client_gets_the_login_module_under_its_relocated_name() -> None:
    librdkafka = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p"}
    shaded = connector_properties(librdkafka, {}, relocated="org.apache.flink.kafka.shaded.")
    assert shaded["sasl.jaas.config"].startswith(
        "org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram.ScramLoginModule "
    )


def test_the_feature_job_names_the_login_module_inside_its_connector_jar() -> None:
    settings = FeatureJobSettings.load(
        {"STREAMREC_KAFKA_CONFIG": "sasl.mechanism=PLAIN,sasl.username=u,sasl.password=p"}
    )
    module = settings.connector_properties()["sasl.jaas.config"].split()[0]
    assert module == "org.apache.flink.kafka.shaded." + PLAIN_MODULE
