"""Micro-benchmark of the feature writer (not part of the test suite).

    .venv/bin/python -m tests.jobs.feature_writer.bench_writer [--rows 50000]

Needs Kafka and Redis from STREAMREC_KAFKA_BOOTSTRAP_SERVERS / STREAMREC_REDIS_URL
(e.g. ``make up``). Side by side in one run, on the fresh-clicks view (one row per
input event, ~60 packed events per record, every user distinct so nothing
coalesces: the worst case):

* ``direct``: decode + convert + one Lua-upsert pipeline per batch into Redis;
* ``feast``: the same rows through ``FeatureStore.write_to_online_store``;
* ``kafka``: the whole loop, records produced to a topic then consumed, written, committed,
  twice: with one batch's Redis write overlapping the next batch's poll and conversion (the
  default), and one batch at a time.

Equal work: all three paths write the same ``--rows`` records (one shared count;
before 2026-12-01 Feast got only the first 5,000 of 50,000). Feast's path is the
slowest but fits: 50,000 synthetic rows took about 16 s through it on 2 cores
(3,200 rows/s, against 6,000 at 5,000 rows), the whole run about 80 s.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pandas as pd
from confluent_kafka import Producer

from jobs.feature_writer.cli import build_loop, redis_client
from jobs.feature_writer.rows import ConversionOptions, to_row, to_rows
from jobs.feature_writer.settings import WriterSettings
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from runtime.online.redis_store import OnlineStoreWriter
from schemas.codec import feature_update_codec
from schemas.features import UserRecentEvents, pack_event
from schemas.online.feast_format import FeatureRow
from tests.benchmarks.report import result_line
from tests.feature_repo.applied import applied_copy

BEHAVIORS = ("pv", "pv", "pv", "pv", "cart", "fav", "buy")


def records(n: int, events: int, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    out = []
    for user in range(1, n + 1):
        latest = now - rng.randrange(3_600_000)
        packed = [
            pack_event(latest - i * rng.randrange(5_000, 40_000), rng.randrange(1, 5_000_000),
                       rng.randrange(1, 10_000), rng.choice(BEHAVIORS))
            for i in range(events)
        ]  # fmt: skip
        out.append(msgspec.json.encode(UserRecentEvents(user, latest, packed)))
    return out


def taobao_records(limit: int) -> list[bytes]:
    """The real stream as the Flink job emits it: per event, the user's last 50 arrivals."""
    from collections import defaultdict, deque

    from jobs.datasets import RowAudit, read_dataset

    last: dict[int, deque[str]] = defaultdict(lambda: deque(maxlen=50))
    out = []
    for event in read_dataset("taobao", None, RowAudit()):
        arrivals = last[event.user_id]
        arrivals.append(pack_event(event.ts, event.item_id, event.category_id, event.behavior))
        latest = max(int(p[:13]) for p in arrivals)
        out.append(msgspec.json.encode(UserRecentEvents(event.user_id, latest, sorted(arrivals))))
        if len(out) >= limit:
            break
    return out


def bench_direct(raw: list[bytes], writer: OnlineStoreWriter, batch: int) -> float:
    codec, options = feature_update_codec(), ConversionOptions()
    start = time.perf_counter()
    for i in range(0, len(raw), batch):
        writer.write(to_rows([codec.decode(r) for r in raw[i : i + batch]], options))
    return len(raw) / (time.perf_counter() - start)


def bench_feast(rows: list[FeatureRow], redis_url: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        repo = applied_copy(Path(tmp), redis_url)
        frame = pd.DataFrame(
            [{"user_id": r.entity_id, **r.decoded(),
              "event_timestamp": datetime.fromtimestamp(r.event_ns // 1000 / 1e6, tz=UTC)}
             for r in rows]
        )  # fmt: skip
        start = time.perf_counter()
        repo.store.write_to_online_store("user_recent_clicks", frame)
        return len(rows) / (time.perf_counter() - start)


def bench_kafka(
    raw: list[bytes], kafka: KafkaSettings, redis_url: str, batch: int, overlap: bool
) -> float:
    topic = f"bench-feature-updates-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka, [TopicSpec(topic, partitions=1)])
    producer = Producer(kafka.client_config(**{"linger.ms": 20}))
    for payload in raw:
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.1)  # local queue full: let deliveries drain
    producer.flush(60)
    settings = WriterSettings(
        kafka=kafka, topic=topic, group_id=f"bench-{uuid.uuid4().hex[:8]}",
        redis_url=redis_url, project="streamrec_bench", batch_size=batch, overlap_writes=overlap,
    )  # fmt: skip
    loop = build_loop(settings)
    loop.run_batch()  # join the group, fetch metadata: not what we measure
    done = loop.stats.records
    start = time.perf_counter()
    stats = loop.run(max_records=len(raw), max_seconds=300)
    elapsed = time.perf_counter() - start
    loop.close()
    return (stats.records - done) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=50_000, help="records, the same for every path")
    parser.add_argument("--events", type=int, default=60, help="packed events per record")
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument(
        "--workload",
        choices=("synthetic", "taobao"),
        default="synthetic",
        help="synthetic: every record a new user with --events in the horizon (worst case); "
        "taobao: the real stream through a simulated OVER window",
    )
    args = parser.parse_args()
    settings = WriterSettings.from_env()
    raw = (
        records(args.rows, args.events)
        if args.workload == "synthetic"
        else taobao_records(args.rows)
    )
    writer = OnlineStoreWriter(redis_client(settings.redis_url), "streamrec_bench")
    direct = bench_direct(raw, writer, args.batch)
    codec, options = feature_update_codec(), ConversionOptions()
    feast = bench_feast([to_row(update, options) for update in map(codec.decode, raw)],
                        settings.redis_url)  # fmt: skip
    overlapped = bench_kafka(raw, settings.kafka, settings.redis_url, args.batch, True)
    one_at_a_time = bench_kafka(raw, settings.kafka, settings.redis_url, args.batch, False)
    sizes = [len(u.events) for u in map(feature_update_codec().decode, raw[:5000])]  # type: ignore[union-attr]
    print(
        f"workload {args.workload}: {len(raw)} records, "
        f"{sum(sizes) / len(sizes):.1f} packed events each"
    )
    print(f"{'path':<40} {'rows/s':>10}")
    print(f"{'direct (decode+convert+Redis pipeline)':<40} {direct:>10,.0f}")
    print(f"{'Feast write_to_online_store':<40} {feast:>10,.0f}")
    print(f"{'Kafka -> writer loop -> Redis, commit':<40} {overlapped:>10,.0f}")
    print(f"{'  the same, one batch at a time':<40} {one_at_a_time:>10,.0f}")
    print(result_line(rows=len(raw), direct_rows_per_s=direct, kafka_loop_rows_per_s=overlapped,
                      kafka_loop_one_at_a_time_rows_per_s=one_at_a_time,
                      overlap_speedup=f"{overlapped / one_at_a_time:.2f}",
                      feast_sdk_rows_per_s=feast, speedup=f"{direct / feast:.1f}"))  # fmt: skip


if __name__ == "__main__":
    main()
