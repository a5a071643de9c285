"""The demo's ingest check: the replay read back exactly, through the dead-letter router."""

from __future__ import annotations

from confluent_kafka import Producer

from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.verify import Consumed, RoundTrip
from runtime.deadletter import DeadLetterPublisher, DeadLetterRouter
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec

PARTITIONS = 4


def read_back(
    settings: KafkaSettings, topic: str, before: dict[int, int]
) -> tuple[list[Consumed], int]:
    """Decode the topic's new records as a consumer would; return them and the dead-letter count."""
    publisher = DeadLetterPublisher(Producer(settings.client_config()), consumer_name="demo")
    router = DeadLetterRouter(event_codec(), publisher)
    after = high_watermarks(settings, topic)
    consumed = []
    for message in read_range(settings, topic, before, after):
        event = router.decode(message)
        if event is not None:
            consumed.append(Consumed(message.partition(), message.offset(), event))
    publisher.flush()
    return consumed, sum(publisher.counts.values())


def report(trip: RoundTrip, dead_letters: int, requests: tuple[int, int]) -> list[str]:
    verdict = "PASS: every event arrived once, per-user order kept" if trip.exact else "FAIL"
    rows = [
        ("events sent (file + probes)", str(trip.sent)),
        ("events consumed back", str(trip.received)),
        ("missing / duplicated", f"{trip.missing} / {trip.duplicated}"),
        ("users out of order", str(trip.users_out_of_order)),
        ("dead-lettered", str(dead_letters)),
        ("requests produced / read", f"{requests[0]} / {requests[1]}"),
    ]
    return [f"{label:<28}{value:>14}" for label, value in rows] + [verdict]
