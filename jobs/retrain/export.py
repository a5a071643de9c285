"""The events topic over a time window, written as the ``events`` dataset (one record a line).

Every partition is read from the first offset at or after ``start_ms`` (Kafka's
time index) up to the end offset it had when the export began, so the export ends
even while producers keep writing. Records are written as consumed; a raw line break
inside one can only be JSON whitespace (one inside a string is escaped), so it becomes
a space and the line stays one record. The training job's reader refuses bad ones
with a reason.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from runtime.kafka import KafkaSettings


@dataclass(frozen=True)
class Exported:
    path: Path
    records: int
    partitions: int


def export_window(
    kafka: KafkaSettings,
    topic: str,
    start_ms: int,
    out: Path,
    timeout_s: float = 300.0,
) -> Exported:
    consumer = Consumer(
        kafka.client_config(
            **{
                "group.id": f"streamrec-retrain-export-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        wanted = [TopicPartition(topic, p, start_ms) for p in sorted(partitions)]
        starts = consumer.offsets_for_times(wanted, timeout=30)
        ends = {p.partition: consumer.get_watermark_offsets(p, timeout=30)[1] for p in wanted}
        # No record at or after start_ms: offset -1, nothing to read there.
        todo = [tp for tp in starts if tp.offset >= 0 and tp.offset < ends[tp.partition]]
        consumer.assign(todo)
        left = {tp.partition for tp in todo}
        records, deadline = 0, time.monotonic() + timeout_s
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as sink:
            while left:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic}: export not done in {timeout_s:.0f} s")
                for message in consumer.consume(1000, timeout=1.0):
                    partition, offset = message.partition(), message.offset()
                    if message.error() is not None or partition not in left or offset is None:
                        continue
                    if offset < ends[partition] and (value := message.value()):
                        sink.write(value.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n")
                        records += 1
                    if offset + 1 >= ends[partition]:
                        left.discard(partition)
        return Exported(out, records, len(todo))
    finally:
        consumer.close()
