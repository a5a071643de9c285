"""``make bench-ingest``: the replay path against raw confluent-kafka, side by side.

Produce: ``run_replay`` (read the file, validate each row, encode, produce keyed
by user) against a bare ``Producer.produce`` of the same, pre-encoded bytes with
the same producer settings. Consume: ``RecordConsumer`` (decode, validate,
dead-letter routing) against a bare ``Consumer.consume`` of the same topic.
Rounds alternate the two so machine noise hits both; medians are reported.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from jobs.datasets import RowAudit, read_dataset
from jobs.replay.producer import PRODUCER_DEFAULTS, user_key
from jobs.replay.run import ReplayOptions, run_replay
from runtime.consumer import CONSUMER_DEFAULTS, RecordConsumer
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from schemas.codec import event_codec
from tests.benchmarks.report import print_table, result_line, save_bar_plot
from tests.support.kafka_session import kafka_for_run

PARTITIONS = 4


def fresh_topic(settings: KafkaSettings, label: str) -> str:
    name = f"bench-{label}-{uuid.uuid4().hex[:8]}"
    ensure_topics(settings, [TopicSpec(name, PARTITIONS)])
    return name


def replay_produce(
    settings: KafkaSettings, topic: str, _payloads: list[tuple[bytes, bytes]]
) -> int:
    summary = run_replay(ReplayOptions(topic=topic), settings)
    assert summary.ok, summary.delivery.errors
    return summary.events


def raw_produce(settings: KafkaSettings, topic: str, payloads: list[tuple[bytes, bytes]]) -> int:
    producer = Producer(settings.client_config(**PRODUCER_DEFAULTS))
    for key, value in payloads:
        while True:
            try:
                producer.produce(topic, value, key=key)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return len(payloads)


def record_consume(settings: KafkaSettings, topic: str, expected: int) -> float:
    """Events/s through RecordConsumer, timed from the first record (group join excluded)."""
    consumer = RecordConsumer(settings, [topic], f"bench-{uuid.uuid4().hex}", event_codec())
    try:
        first = consumer.poll_batch(max_records=1000, timeout_s=10.0)
        started, seen = time.perf_counter(), len(first)
        while seen < expected:
            seen += len(consumer.poll_batch(max_records=1000, timeout_s=1.0))
        consumer.commit()
        return (seen - len(first)) / (time.perf_counter() - started)
    finally:
        consumer.close()


def raw_consume(settings: KafkaSettings, topic: str, expected: int) -> float:
    """Events/s of a bare consumer, no decoding, timed the same way."""
    config = settings.client_config(**CONSUMER_DEFAULTS)
    config["group.id"] = f"bench-{uuid.uuid4().hex}"
    consumer = Consumer(config)
    consumer.subscribe([topic])
    try:
        first = _valid(consumer.consume(1000, timeout=10.0))
        started, seen = time.perf_counter(), first
        while seen < expected:
            seen += _valid(consumer.consume(1000, timeout=1.0))
        consumer.commit(asynchronous=False)
        return (seen - first) / (time.perf_counter() - started)
    finally:
        consumer.close()


def _valid(messages: list[Any]) -> int:
    return sum(1 for message in messages if message.error() is None)


def timed(work: Callable[..., int], *args: object) -> float:
    """Records per second of ``work(*args)``, which returns how many records it handled."""
    started = time.perf_counter()
    count = work(*args)
    return count / (time.perf_counter() - started)


def run_rounds(settings: KafkaSettings, rounds: int) -> dict[str, list[float]]:
    payloads = [
        (user_key(e.user_id), event_codec().encode(e))
        for e in read_dataset("taobao", None, RowAudit())
    ]
    rates: dict[str, list[float]] = {
        "produce": [],
        "raw_produce": [],
        "consume": [],
        "raw_consume": [],
    }
    for round_no in range(1, rounds + 1):
        topics = {}
        for label, produce in (("produce", replay_produce), ("raw_produce", raw_produce)):
            topic = fresh_topic(settings, label)
            rates[label].append(timed(produce, settings, topic, payloads))
            topics[label] = topic
        # Both consumers read the topic the replay path wrote: the same bytes.
        for label, consume in (("consume", record_consume), ("raw_consume", raw_consume)):
            topic = topics["produce"]
            rates[label].append(consume(settings, topic, len(payloads)))
        latest = ", ".join(f"{label}={values[-1]:,.0f}/s" for label, values in rates.items())
        print(f"round {round_no}/{rounds}: {latest}", file=sys.stderr)
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.ingest", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plot", type=Path, default=Path("reports/bench-ingest.png"))
    args = parser.parse_args(argv)
    with kafka_for_run() as settings:
        rates = run_rounds(settings, args.rounds)
    medians = {label: statistics.median(values) for label, values in rates.items()}
    rows = [
        ("produce (events/s)", medians["produce"], medians["raw_produce"]),
        ("consume (events/s)", medians["consume"], medians["raw_consume"]),
    ]
    print_table(
        ["path", "streamrec", "raw confluent-kafka", "ratio"],
        [(name, f"{ours:,.0f}", f"{raw:,.0f}", f"{ours / raw:.2f}") for name, ours, raw in rows],
    )
    save_bar_plot(
        args.plot,
        "Ingest throughput, 110,300 Taobao events (median of rounds)",
        [name for name, _, _ in rows],
        {
            "streamrec": [ours for _, ours, _ in rows],
            "raw confluent-kafka": [raw for _, _, raw in rows],
        },
    )
    print(f"plot: {args.plot}")
    print(
        result_line(
            produce_eps=medians["produce"],
            consume_eps=medians["consume"],
            raw_produce_eps=medians["raw_produce"],
            raw_consume_eps=medians["raw_consume"],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
