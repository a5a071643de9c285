from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.deadletter import DeadLetterPublisher, DeadLetterRouter, build_dead_letter
from schemas.codec import dead_letter_codec, event_codec
from schemas.errors import SchemaViolation
from schemas.records import BehaviorEvent


@dataclass
class FakeMessage:
    payload: bytes | None
    topic_name: str = "user-behavior"
    part: int = 2
    off: int = 41

    def value(self) -> bytes | None:
        return self.payload

    def key(self) -> bytes | None:
        return b"17"

    def topic(self) -> str | None:
        return self.topic_name

    def partition(self) -> int | None:
        return self.part

    def offset(self) -> int | None:
        return self.off


class RecordingProducer:
    """Stands in for librdkafka's local queue only; integration tests use the real broker."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes | None]] = []

    def produce(self, topic: str, value: bytes, key: bytes | None, on_delivery: Any) -> None:
        self.sent.append((topic, value, key))
        on_delivery(None, None)

    def poll(self, _timeout: float) -> int:
        return 0

    def flush(self, _timeout: float) -> int:
        return 0


def test_envelope_keeps_the_exact_bytes_and_the_source_position() -> None:
    original = b'{"user_id": "x"}\x00\xff'
    letter = build_dead_letter(FakeMessage(original), SchemaViolation("bad type"), "worker", 123)
    assert letter.original == original
    assert letter.original_size == len(original)
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        "user-behavior",
        2,
        41,
    )
    assert (letter.error, letter.error_kind, letter.key) == ("bad type", "schema", b"17")


def test_router_passes_good_records_and_dead_letters_bad_ones() -> None:
    producer = RecordingProducer()
    publisher = DeadLetterPublisher(producer, "test", clock=lambda: 1_600_000_000_000)
    router = DeadLetterRouter(event_codec(), publisher)
    good = b'{"user_id":1,"item_id":2,"category_id":3,"behavior":"pv","ts":1511544070000}'
    assert router.decode(FakeMessage(good)) == BehaviorEvent(1, 2, 3, "pv", 1511544070000)
    assert router.decode(FakeMessage(b"not json")) is None
    assert router.decode(FakeMessage(None)) is None
    publisher.flush()
    assert [topic for topic, _, _ in producer.sent] == ["user-behavior.dlq"] * 2
    letter = dead_letter_codec().decode(producer.sent[0][1])
    assert letter.original == b"not json"
    assert letter.error_kind == "malformed"
    assert publisher.counts == {"malformed": 2}
