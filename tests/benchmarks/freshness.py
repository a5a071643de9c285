"""Freshness: from an event produced to its click being readable in the online store."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from dataclasses import dataclass, field

import redis

from jobs.datasets import RowAudit, read_dataset
from jobs.feature_writer.redis_store import read_rows
from jobs.replay.producer import KeyedProducer, user_key
from schemas.codec import event_codec, wall_clock_ms
from schemas.kafka import KafkaSettings
from schemas.records import BehaviorEvent

VIEW = "user_recent_clicks"
WARM_UP_S = 5


@dataclass
class Probe:
    """Polls the online store for the sampled clicks that are not readable yet."""

    client: redis.Redis
    pending: dict[int, tuple[int, int, float]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def expect(self, event: BehaviorEvent, sent_at: float) -> None:
        with self.lock:
            self.pending[event.user_id] = (event.item_id, event.ts, sent_at)

    def run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                users = list(self.pending)
            if users:
                rows = read_rows(self.client, VIEW, users, ["item_ids", "event_ts"])
                seen_at = time.perf_counter()
                for user, row in zip(users, rows, strict=True):
                    self._check(user, row, seen_at)
            time.sleep(0.002)

    def _check(self, user: int, row: dict[str, list[int]] | None, seen_at: float) -> None:
        with self.lock:
            item, ts, sent_at = self.pending.get(user, (0, 0, 0.0))
            if row and (item, ts) in zip(row["item_ids"], row["event_ts"], strict=True):
                self.latencies_ms.append((seen_at - sent_at) * 1000)
                del self.pending[user]


def live_events(count: int) -> list[BehaviorEvent]:
    """Real users, items and behaviours from the stream file (their times are set at sending)."""
    stream = read_dataset("taobao", None, RowAudit())
    return list(itertools.islice(itertools.cycle(list(stream)), count))


def send(producer: KeyedProducer, topic: str, event: BehaviorEvent) -> BehaviorEvent:
    now = BehaviorEvent(event.user_id, event.item_id, event.category_id, event.behavior,
                        wall_clock_ms())  # fmt: skip
    producer.send(topic, user_key(now.user_id), event_codec().encode(now))
    return now


def wait_until_live(producer: KeyedProducer, topic: str, probe: Probe, timeout_s: float) -> None:
    """The job and writer start in seconds; send warm-up clicks until one is readable."""
    deadline = time.monotonic() + timeout_s
    for n in itertools.count(1):
        probe.expect(send(producer, topic, BehaviorEvent(999_000_000 + n, 1, 1, "pv", 0)),
                     time.perf_counter())  # fmt: skip
        time.sleep(0.5)
        if probe.latencies_ms or time.monotonic() > deadline:
            break
    if not probe.latencies_ms:
        raise TimeoutError("the feature job and writer did not become live")
    with probe.lock:
        probe.latencies_ms.clear()
        probe.pending.clear()


def measure_freshness(
    kafka: KafkaSettings,
    redis_url: str,
    topic: str,
    rate: int,
    seconds: int,
    sample_every: int = 10,
) -> list[float]:
    """Latencies (ms) of every ``sample_every``-th event sent at ``rate`` events/s."""
    probe = Probe(redis.Redis.from_url(redis_url))
    thread = threading.Thread(target=probe.run, daemon=True)
    thread.start()
    producer = KeyedProducer(kafka, **{"linger.ms": 1})
    wait_until_live(producer, topic, probe, timeout_s=180)
    events = live_events(rate * (seconds + WARM_UP_S))
    # The first seconds at full rate warm the JIT and fill caches; they are not measured.
    send_paced(producer, topic, probe, events[: rate * WARM_UP_S], rate, sample_every=0)
    with probe.lock:
        probe.latencies_ms.clear()
    send_paced(producer, topic, probe, events[rate * WARM_UP_S :], rate, sample_every)
    producer.flush()
    deadline = time.monotonic() + 30
    while probe.pending and time.monotonic() < deadline:
        time.sleep(0.1)
    probe.stop.set()
    thread.join()
    if probe.pending:
        print(f"{len(probe.pending)} sampled clicks never became readable", file=sys.stderr)
    return probe.latencies_ms


def send_paced(
    producer: KeyedProducer, topic: str, probe: Probe, events: list[BehaviorEvent], rate: int,
    sample_every: int,
) -> None:  # fmt: skip
    """Send at a steady ``rate``; every ``sample_every``-th event is probed (0: none)."""
    started = time.perf_counter()
    for n, event in enumerate(events):
        due = started + n / rate
        while (lag := due - time.perf_counter()) > 0:
            time.sleep(min(lag, 0.005))
        sent = send(producer, topic, event)
        if sample_every and n % sample_every == 0:
            probe.expect(sent, time.perf_counter())


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]
