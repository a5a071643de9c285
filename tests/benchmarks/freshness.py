"""Freshness: from an event produced to its click being readable in the online store."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from jobs.datasets import RowAudit, read_dataset
from jobs.replay.producer import KeyedProducer, user_key
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient, connect
from runtime.online.redis_store import read_rows
from schemas.codec import event_codec, wall_clock_ms
from schemas.records import BehaviorEvent
from tests.benchmarks.report import failure_percentile, failure_rate

VIEW = "user_recent_clicks"
# The fresh view's changelog keys: it writes one row per valid event, so its rows count
# the events a job read.
FRESH_ROW_PREFIX = b"user_recent:"
WARM_UP_USER_FROM = 999_000_000  # the clicks that wait for the pipeline to be live
WARM_UP_S = 5
READABLE_WAIT_S = 30  # after the last send; a sampled click not readable by then is a failure
# Pause between two polls of the store; a click's latency is known to within it (plus one
# read). Polling every 2 ms, the probe read every pending user's row about a hundred times
# a second: the probing process took 45% of a core and Redis 32% (from 20%) on a box the
# pipeline it measures shares, and freshness p99 at 5,000 events/s read 0.9-1.5 s; polling
# every 10 ms, 0.4-0.6 s, with the job's own share (event to changelog) unchanged.
POLL_PAUSE_S = 0.01


@dataclass(frozen=True)
class Freshness:
    """Latencies of the sampled clicks that became readable, and how many never did."""

    latencies_ms: list[float]
    unreadable: int
    # Wall-clock ms when the measured sending began (the warm-up's events are older).
    measured_from_ms: int = 0

    @property
    def samples(self) -> int:
        return len(self.latencies_ms) + self.unreadable

    @property
    def unreadable_rate(self) -> float:
        return failure_rate(self.samples, self.unreadable)

    def p(self, pct: float) -> float:
        """Percentile with every unreadable click at +infinity."""
        return failure_percentile(self.latencies_ms, self.unreadable, pct)


@dataclass
class Probe:
    """Polls the online store for the sampled clicks that are not readable yet."""

    client: OnlineClient
    # user -> (item, ts) -> send time: a user sampled twice keeps both probes. Keyed by
    # user so that a poll's check costs the clicks it read, not every pending click per
    # user read: the quadratic check slowed the probe as latency grew (at 5,000 events/s
    # and a second behind, a million comparisons a poll), adding its own delay.
    pending: dict[int, dict[tuple[int, int], float]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def waiting(self) -> int:
        """Sampled clicks not readable yet."""
        with self.lock:
            return sum(len(clicks) for clicks in self.pending.values())

    def expect(self, event: BehaviorEvent, sent_at: float) -> None:
        with self.lock:
            self.pending.setdefault(event.user_id, {})[(event.item_id, event.ts)] = sent_at

    def forget(self) -> None:
        """Drop every pending click and latency (after the warm-up)."""
        with self.lock:
            self.pending.clear()
            self.latencies_ms.clear()

    def run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                users = list(self.pending)
            if users:
                rows = read_rows(self.client, VIEW, users, ["item_ids", "event_ts"])
                seen_at = time.perf_counter()
                for user, row in zip(users, rows, strict=True):
                    if row:
                        self._check(user, zip(row["item_ids"], row["event_ts"], strict=True),
                                    seen_at)  # fmt: skip
            time.sleep(POLL_PAUSE_S)

    def _check(self, user: int, clicks: Iterable[tuple[int, int]], seen_at: float) -> None:
        with self.lock:
            waiting = self.pending.get(user)
            if not waiting:
                return
            for click in clicks:
                sent_at = waiting.pop(click, None)
                if sent_at is not None:
                    self.latencies_ms.append((seen_at - sent_at) * 1000)
            if not waiting:
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
        probe.expect(send(producer, topic, BehaviorEvent(WARM_UP_USER_FROM + n, 1, 1, "pv", 0)),
                     time.perf_counter())  # fmt: skip
        time.sleep(0.5)
        if probe.latencies_ms or time.monotonic() > deadline:
            break
    if not probe.latencies_ms:
        raise TimeoutError("the feature job and writer did not become live")
    probe.forget()


def measure_freshness(
    kafka: KafkaSettings,
    redis_url: str,
    topic: str,
    rate: int,
    seconds: int,
    sample_every: int = 10,
) -> Freshness:
    """Every ``sample_every``-th event sent at ``rate`` events/s: its latency, or unreadable."""
    probe = Probe(connect(redis_url))
    thread = threading.Thread(target=probe.run, daemon=True)
    thread.start()
    producer = KeyedProducer(kafka, **{"linger.ms": 1})
    wait_until_live(producer, topic, probe, timeout_s=180)
    events = live_events(rate * (seconds + WARM_UP_S))
    # The first seconds at full rate warm the JIT and fill caches; they are not measured.
    send_paced(producer, topic, probe, events[: rate * WARM_UP_S], rate, sample_every=0)
    probe.forget()
    measured_from_ms = wall_clock_ms()
    send_paced(producer, topic, probe, events[rate * WARM_UP_S :], rate, sample_every)
    producer.flush()
    deadline = time.monotonic() + READABLE_WAIT_S
    while probe.waiting and time.monotonic() < deadline:
        time.sleep(0.1)
    probe.stop.set()
    thread.join()
    return Freshness(list(probe.latencies_ms), probe.waiting, measured_from_ms)


# The sender wakes once per tick and sends the events due by then: at 5,000 events/s,
# one sleep per event cost the sending process about half a core (of the box's two) and
# the broker a produce request per event, load no producer elsewhere puts on this box.
SEND_TICK_S = 0.005


def send_paced(
    producer: KeyedProducer, topic: str, probe: Probe, events: list[BehaviorEvent], rate: int,
    sample_every: int,
) -> None:  # fmt: skip
    """Send at a steady ``rate`` (in ticks of ``SEND_TICK_S``); every ``sample_every``-th
    event is probed (0: none), from the moment it was handed to the producer."""
    started = time.perf_counter()
    done = 0
    while done < len(events):
        due = min(len(events), int((time.perf_counter() - started) * rate) + 1)
        for n in range(done, due):
            sent = send(producer, topic, events[n])
            if sample_every and n % sample_every == 0:
                probe.expect(sent, time.perf_counter())
        done = due
        time.sleep(SEND_TICK_S)


# The split of freshness between the job and the writer: the job's share ends when its
# producer stamps the fresh view's row (the changelog's CreateTime, the producer's wall
# clock: the job's sinks set no record time); the rest is the broker, the writer and the
# store. The warm-up's clicks and events are left out.
def job_latency_ms(key: bytes | None, value: bytes | None, created_ms: int,
                   measured_from_ms: int) -> float | None:  # fmt: skip
    """Event sent -> the fresh view's row stamped by the job, for a measured event's row."""
    if not value or not (key or b"").startswith(FRESH_ROW_PREFIX):
        return None
    row = json.loads(value)
    sent_ms = int(row["latest_ts"])
    if row["user_id"] >= WARM_UP_USER_FROM or sent_ms < measured_from_ms:
        return None
    return float(created_ms - sent_ms)


def job_latencies_ms(kafka: KafkaSettings, changelog: str, measured_from_ms: int) -> list[float]:
    """The job's share of every measured event (all of them, not only the probed)."""
    end = high_watermarks(kafka, changelog)
    found = (job_latency_ms(m.key(), m.value(), m.timestamp()[1], measured_from_ms)
             for m in read_range(kafka, changelog, {}, end))  # fmt: skip
    return [latency for latency in found if latency is not None]
