"""The Java Kafka client's properties, derived from the librdkafka ones.

Python roles talk to Kafka through librdkafka; the Flink job's Kafka connector is
the Java client, whose properties differ for everything about security. Both read
``STREAMREC_KAFKA_CONFIG`` (librdkafka names), so a secured cluster is set up once;
:func:`java_properties` translates:

=========================================  ===========================================
librdkafka                                 Java
=========================================  ===========================================
``security.protocol``                      ``security.protocol`` (upper case)
``sasl.mechanism`` / ``sasl.mechanisms``   ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256/512)
``sasl.username`` + ``sasl.password``      ``sasl.jaas.config`` (Plain/ScramLoginModule)
``ssl.ca.location``                        ``ssl.truststore.type=PEM`` +
                                           ``ssl.truststore.location``
``ssl.endpoint.identification.algorithm``  the same; librdkafka's ``none`` is Java's ``""``
=========================================  ===========================================

The properties in :data:`SAME_IN_BOTH` mean the same in both clients and pass as
they are. Anything else about security (``sasl.*``, ``ssl.*``, ``security.*``,
names that look like credentials) is refused: a client certificate
(``ssl.certificate.location``/``ssl.key.location``: Java wants key and chain in one
PEM keystore), Kerberos, OAUTHBEARER have no faithful translation, and silently
dropping one would connect with less security than asked for. Those go, in Java
names, in the Java-only properties (``STREAMREC_KAFKA_JAVA_CONFIG``), laid over the
derived ones by :func:`connector_properties`; once those set any security property,
the untranslatable librdkafka ones are theirs and no longer an error. Other
librdkafka properties (tuning of the Python clients, e.g. ``linger.ms``,
``queue.buffering.max.ms``) are left out.

Errors name the property, never its value: the value may be a password.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.settings import SECRET_MARKERS, SettingsError

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
LOGIN_MODULES = {
    "PLAIN": PLAIN_MODULE,
    "SCRAM-SHA-256": SCRAM_MODULE,
    "SCRAM-SHA-512": SCRAM_MODULE,
}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Same name, same meaning in librdkafka and the Java client (connection behaviour only).
SAME_IN_BOTH = frozenset(
    {
        "client.id",
        "client.rack",
        "connections.max.idle.ms",
        "metadata.max.age.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "socket.connection.setup.timeout.ms",
    }
)
# Read here and translated; every other name under these prefixes is refused.
_TRANSLATED = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
        "ssl.ca.location",
        "ssl.endpoint.identification.algorithm",
    }
)
_SECURITY_PREFIXES = ("sasl.", "ssl.", "security.")
_ENDPOINT_CHECK = {"none": "", "https": "https"}


class KafkaJavaConfigError(SettingsError):
    """librdkafka properties with no faithful Java equivalent (the message names no value)."""


def jaas_quoted(value: str, name: str) -> str:
    """``value`` as a double-quoted token of Kafka's JAAS parser.

    Kafka reads ``sasl.jaas.config`` with ``java.io.StreamTokenizer`` (quote char
    ``"``): inside quotes a backslash escapes the next character, and a line end
    ends the string. So ``\\`` and ``"`` are escaped, and control characters
    (which could end the token or be read as an escape) are refused.
    """
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        raise KafkaJavaConfigError(f"{name} contains a line break or control character")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_config(mechanism: str, username: str, password: str, relocated: str = "") -> str:
    """The ``sasl.jaas.config`` of a username/password mechanism (PLAIN or SCRAM).

    ``relocated``: the package prefix a shaded Kafka client moved its classes under
    (Flink's SQL connector jar: ``org.apache.flink.kafka.shaded.``); JAAS loads the
    login module by name, so it must be the name inside that jar.
    """
    module = relocated + LOGIN_MODULES[mechanism]
    user = jaas_quoted(username, "sasl.username")
    secret = jaas_quoted(password, "sasl.password")
    return f"{module} required username={user} password={secret};"


def _mechanism(librdkafka: Mapping[str, str], left_to_java: bool) -> str | None:
    given = {
        librdkafka[key].strip().upper()
        for key in ("sasl.mechanism", "sasl.mechanisms")
        if key in librdkafka
    }
    if len(given) > 1:
        raise KafkaJavaConfigError("sasl.mechanism and sasl.mechanisms disagree")
    if not given:
        return None
    (mechanism,) = given
    if mechanism not in LOGIN_MODULES and left_to_java:
        return None
    if mechanism not in LOGIN_MODULES:
        raise KafkaJavaConfigError(
            f"sasl.mechanism {mechanism} is not translated for the Java client (only "
            f"{', '.join(LOGIN_MODULES)}): give sasl.jaas.config and the rest in "
            "STREAMREC_KAFKA_JAVA_CONFIG"
        )
    return mechanism


def _sasl(librdkafka: Mapping[str, str], left_to_java: bool, relocated: str) -> dict[str, str]:
    mechanism = _mechanism(librdkafka, left_to_java)
    username, password = librdkafka.get("sasl.username"), librdkafka.get("sasl.password")
    if (username is None) != (password is None):
        raise KafkaJavaConfigError("sasl.username and sasl.password go together")
    out: dict[str, str] = {}
    if mechanism is not None:
        out["sasl.mechanism"] = mechanism
    if username is not None and password is not None:
        if mechanism is None and left_to_java:
            return out
        if mechanism is None:  # librdkafka's default, GSSAPI, takes no password
            raise KafkaJavaConfigError("sasl.username/sasl.password need sasl.mechanism")
        out["sasl.jaas.config"] = jaas_config(mechanism, username, password, relocated)
    return out


def _ssl(librdkafka: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if "ssl.ca.location" in librdkafka:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = librdkafka["ssl.ca.location"]
    if "ssl.endpoint.identification.algorithm" in librdkafka:
        check = librdkafka["ssl.endpoint.identification.algorithm"].strip().lower()
        if check not in _ENDPOINT_CHECK:
            raise KafkaJavaConfigError(
                "ssl.endpoint.identification.algorithm must be none or https"
            )
        out["ssl.endpoint.identification.algorithm"] = _ENDPOINT_CHECK[check]
    return out


def _refused(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(_SECURITY_PREFIXES) or any(m in lowered for m in SECRET_MARKERS)


def java_properties(
    librdkafka: Mapping[str, str], *, left_to_java: bool = False, relocated: str = ""
) -> dict[str, str]:
    """The Java client's properties equivalent to the librdkafka ``librdkafka`` ones.

    Raises :class:`KafkaJavaConfigError` for a security property with no
    translation (see the module's table); the error names the property only.
    ``left_to_java``: the Java-only properties set up security themselves, so the
    untranslatable ones (and an untranslatable mechanism) are left out instead.
    """
    refused = sorted(
        name
        for name in librdkafka
        if name not in _TRANSLATED and name not in SAME_IN_BOTH and _refused(name)
    )
    if refused and not left_to_java:
        raise KafkaJavaConfigError(
            f"{', '.join(refused)}: no Java Kafka client equivalent is derived; give the "
            "Java properties in STREAMREC_KAFKA_JAVA_CONFIG and leave these to the "
            "Python roles' STREAMREC_KAFKA_CONFIG"
        )
    out = {name: value for name, value in librdkafka.items() if name in SAME_IN_BOTH}
    if "security.protocol" in librdkafka:
        protocol = librdkafka["security.protocol"].strip().upper()
        if protocol not in PROTOCOLS:
            raise KafkaJavaConfigError(f"security.protocol must be one of {', '.join(PROTOCOLS)}")
        out["security.protocol"] = protocol
    return out | _sasl(librdkafka, left_to_java, relocated) | _ssl(librdkafka)


def connector_properties(
    librdkafka: Mapping[str, str], java_only: Mapping[str, str], relocated: str = ""
) -> dict[str, str]:
    """The derived Java properties with the Java-only ones laid over them (they win).

    Java-only properties that set any security property take over what cannot be
    derived (e.g. a client certificate the Python roles read from
    ``ssl.certificate.location``): the untranslatable librdkafka ones are then not
    an error.
    """
    left_to_java = any(name.lower().startswith(_SECURITY_PREFIXES) for name in java_only)
    derived = java_properties(librdkafka, left_to_java=left_to_java, relocated=relocated)
    return derived | dict(java_only)
