"""Attempts the secured stack must refuse: strangers, wrong passwords, and roles overstepping.

Each probe returns a :class:`Probe` whose ``accepted`` is True when the server let the
attempt through. Only an explicit refusal (an authorization or authentication error,
a TLS failure, an HTTP 4xx) counts as refused; an attempt that neither succeeds nor is
refused within its timeout counts as accepted, so a probe cannot pass by timing out.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import redis
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from runtime.settings import parse_properties

TIMEOUT_S = 10.0
# What a refusal looks like in each client's words.
KAFKA_REFUSALS = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._SSL,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
}


@dataclass(frozen=True)
class Probe:
    kind: str  # "unauthenticated" or "acl"
    name: str
    accepted: bool
    detail: str


def kafka_config(bootstrap: str, kafka_config_text: str = "") -> dict[str, str]:
    config = {"bootstrap.servers": bootstrap, **parse_properties(kafka_config_text)}
    config["log_level"] = "0"  # the refusals are the point: keep librdkafka quiet
    return config


def kafka_metadata(name: str, config: Mapping[str, str], topic: str) -> Probe:
    """Can this client read the topic's metadata (the first thing any client does)?"""
    admin = AdminClient(dict(config))
    try:
        metadata = admin.list_topics(topic=topic, timeout=TIMEOUT_S)
    except KafkaException as exc:
        return Probe("unauthenticated", name, False, exc.args[0].name())
    found = metadata.topics.get(topic)
    if found is not None and found.error is not None:
        return Probe("unauthenticated", name, False, found.error.name())
    return Probe("unauthenticated", name, bool(metadata.brokers), "metadata returned")


def kafka_produce(name: str, config: Mapping[str, str], topic: str) -> Probe:
    """Does a record written with these credentials land in ``topic``?"""
    outcome: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": str(int(TIMEOUT_S * 1000))})
    try:
        producer.produce(topic, b"probe", on_delivery=lambda err, _msg: outcome.append(err))
    except KafkaException as exc:
        return Probe("acl", name, False, exc.args[0].name())
    producer.flush(TIMEOUT_S + 5)
    if not outcome:
        return Probe("acl", name, True, "no verdict within the timeout")
    error = outcome[0]
    if error is None:
        return Probe("acl", name, True, "delivered")
    return Probe("acl", name, error.code() not in KAFKA_REFUSALS, error.name())


def kafka_consume(name: str, config: Mapping[str, str], topic: str, group: str) -> Probe:
    """Can these credentials read ``topic`` (which holds at least one record) in ``group``?

    Subscribing, as every part does: librdkafka then reports a topic it may not read
    as an error message, where a bare assignment just waits.
    """
    errors: list[KafkaError] = []
    consumer = Consumer(
        {**config, "group.id": group, "enable.auto.commit": "false",
         "auto.offset.reset": "earliest", "error_cb": errors.append}
    )  # fmt: skip
    try:
        consumer.subscribe([topic])
        for _ in range(int(TIMEOUT_S)):
            message = consumer.poll(1.0)
            error = None if message is None else message.error()
            if message is not None and error is None:
                return Probe("acl", name, True, "read a record")
            if error is not None:
                errors.append(error)
            refusals = [error for error in errors if error.code() in KAFKA_REFUSALS]
            if refusals:
                return Probe("acl", name, False, refusals[0].name())
        return Probe("acl", name, True, "no verdict within the timeout")
    finally:
        consumer.close()


def redis_attempt(kind: str, name: str, url: str, action: Callable[[redis.Redis], object]) -> Probe:
    """Run ``action`` on a client of ``url``; refused when Redis or TLS says no."""
    client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
    try:
        action(client)
    except (redis.AuthenticationError, redis.ResponseError) as exc:
        # NOPERM, NOAUTH, WRONGPASS, "user is disabled": all are refusals.
        return Probe(kind, name, False, type(exc).__name__)
    except redis.ConnectionError as exc:
        return Probe(kind, name, False, f"connection refused ({type(exc).__name__})")
    finally:
        client.close()
    return Probe(kind, name, True, "done")


def http_status(
    kind: str, name: str, url: str, body: bytes, headers: Mapping[str, str] | None = None
) -> Probe:
    """POST ``body``: refused on a 4xx (401/403: no key), accepted on a 2xx."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=body, method="POST", headers=dict(headers or {}))
    try:
        with opener.open(request, timeout=TIMEOUT_S) as response:
            return Probe(kind, name, True, f"HTTP {response.status}")
    except urllib.error.HTTPError as exc:
        return Probe(kind, name, exc.code >= 500, f"HTTP {exc.code}")
    except urllib.error.URLError as exc:
        return Probe(kind, name, False, f"connection refused ({exc.reason})")


def grpc_repository_index(name: str, url: str, ca_file: str | None) -> Probe:
    """Triton's model-control RPC over gRPC, without the key."""
    import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]
    from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

    client = grpcclient.InferenceServerClient(
        url, ssl=ca_file is not None, root_certificates=ca_file
    )
    try:
        client.get_model_repository_index(client_timeout=TIMEOUT_S)
    except InferenceServerException as exc:
        return Probe("unauthenticated", name, False, (exc.status() or "refused"))
    finally:
        client.close()
    return Probe("unauthenticated", name, True, "index returned")
