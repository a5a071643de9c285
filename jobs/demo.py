"""``make demo``: the local stack, the real Taobao stream replayed, and proof that it all arrived.

Steps: start Kafka and Redis (unless ``STREAMREC_KAFKA_BOOTSTRAP_SERVERS`` points
at a cluster), replay the 110,300-event stream with requests mixed in, read both
topics back through the same decoder and dead-letter router the pipeline uses,
and compare with the source rows. Exits 1 if anything was lost, duplicated or
reordered.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from confluent_kafka import Producer
from tqdm import tqdm

from jobs.datasets import RowAudit, read_dataset
from jobs.localstack.session import kafka_for_run
from jobs.replay.readback import high_watermarks, read_range
from jobs.replay.run import ReplayOptions, run_replay
from jobs.replay.verify import Consumed, RoundTrip, compare
from schemas.codec import event_codec, request_codec
from schemas.deadletter import DeadLetterPublisher, DeadLetterRouter
from schemas.kafka import KafkaSettings, TopicSpec, dead_letter_spec, ensure_topics
from schemas.topics import REC_REQUESTS, USER_BEHAVIOR, dead_letter_topic

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


def count_requests(settings: KafkaSettings, before: dict[int, int]) -> int:
    codec = request_codec()
    after = high_watermarks(settings, REC_REQUESTS)
    messages = read_range(settings, REC_REQUESTS, before, after)
    return sum(1 for message in messages if codec.decode(message.value()) is not None)


def report(trip: RoundTrip, dead_letters: int, requests: tuple[int, int]) -> list[str]:
    verdict = "PASS: every event arrived once, per-user order kept" if trip.exact else "FAIL"
    rows = [
        ("events from file", str(trip.sent)),
        ("events consumed back", str(trip.received)),
        ("missing / duplicated", f"{trip.missing} / {trip.duplicated}"),
        ("users out of order", str(trip.users_out_of_order)),
        ("dead-lettered", str(dead_letters)),
        ("requests produced / read", f"{requests[0]} / {requests[1]}"),
    ]
    return [f"{label:<28}{value:>14}" for label, value in rows] + [verdict]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__)
    parser.add_argument("--file", type=Path, help="Taobao stream file (default: shared data)")
    parser.add_argument("--request-rate", type=float, default=0.05)
    parser.add_argument("--keep-stack", action="store_true", help="leave the stack running")
    args = parser.parse_args(argv)
    options = ReplayOptions(path=args.file, request_rate=args.request_rate)
    with kafka_for_run(args.keep_stack) as settings:
        topics = [TopicSpec(USER_BEHAVIOR, PARTITIONS), TopicSpec(REC_REQUESTS, PARTITIONS)]
        ensure_topics(settings, [*topics, dead_letter_spec(dead_letter_topic(USER_BEHAVIOR))])
        before = {topic.name: high_watermarks(settings, topic.name) for topic in topics}
        with tqdm(unit="ev", desc="replay", file=sys.stderr) as bar:
            summary = run_replay(options, settings, on_progress=bar.update)
        print(f"replayed {summary.events} events at {summary.events_per_s:,.0f}/s", file=sys.stderr)
        consumed, dead_letters = read_back(settings, USER_BEHAVIOR, before[USER_BEHAVIOR])
        requests_read = count_requests(settings, before[REC_REQUESTS])
    source = list(read_dataset(options.dataset, options.path, RowAudit()))
    trip = compare(source, consumed)
    for line in report(trip, dead_letters, (summary.requests, requests_read)):
        print(line)
    ok = trip.exact and summary.ok and requests_read == summary.requests and not dead_letters
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
