"""One replay run: read a dataset, pace it, produce events and derived requests."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from jobs.datasets import RowAudit, read_dataset
from jobs.replay.pacing import Pacer
from jobs.replay.producer import REQUEST_PRODUCER, DeliveryStats, KeyedProducer, user_key
from jobs.replay.timeshift import TimeShift
from jobs.replay.triggers import TriggerSampler
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec, request_codec, wall_clock_ms
from schemas.records import BehaviorEvent
from schemas.topics import REC_REQUESTS, USER_BEHAVIOR


@dataclass(frozen=True)
class ReplayOptions:
    dataset: str = "taobao"
    path: Path | None = None
    topic: str = USER_BEHAVIOR
    request_topic: str = REC_REQUESTS
    speed: float = 0.0
    request_rate: float = 0.0
    request_k: int = 20
    seed: int = 7
    limit: int | None = None
    sort_by_time: bool = False
    rebase_time: bool = False
    loops: int = 1


@dataclass
class ReplaySummary:
    events: int = 0
    requests: int = 0
    elapsed_s: float = 0.0
    audit: RowAudit = field(default_factory=RowAudit)
    delivery: DeliveryStats = field(default_factory=DeliveryStats)

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def ok(self) -> bool:
        return self.delivery.failed == 0 and self.delivery.pending == 0


def replay_events(options: ReplayOptions, audit: RowAudit) -> Iterator[BehaviorEvent]:
    """The events to send, in sending order, before pacing."""
    events: Iterator[BehaviorEvent] = looped(options, audit)
    events = itertools.islice(events, options.limit)
    if options.rebase_time:
        shift = TimeShift(start_ms=wall_clock_ms())
        return (shift.apply(event) for event in events)
    return events


def one_pass(options: ReplayOptions, audit: RowAudit) -> Iterator[BehaviorEvent]:
    events: Iterable[BehaviorEvent] = read_dataset(options.dataset, options.path, audit)
    if options.sort_by_time:
        events = sorted(events, key=lambda e: e.ts)
    return iter(events)


def looped(options: ReplayOptions, audit: RowAudit) -> Iterator[BehaviorEvent]:
    """``options.loops`` passes over the file, each later in time than the one before.

    Pass k is shifted by k times the file's span (plus a second), so event time
    keeps moving forward and windows of a looped stream stay meaningful.
    """
    span = LoopSpan()
    yield from span.observe(one_pass(options, audit))
    for k in range(1, options.loops):
        offset = k * span.length_ms
        for event in one_pass(options, RowAudit()):
            yield msgspec.structs.replace(event, ts=event.ts + offset)


@dataclass
class LoopSpan:
    first: int | None = None
    last: int | None = None

    def observe(self, events: Iterator[BehaviorEvent]) -> Iterator[BehaviorEvent]:
        for event in events:
            self.first = event.ts if self.first is None else min(self.first, event.ts)
            self.last = event.ts if self.last is None else max(self.last, event.ts)
            yield event

    @property
    def length_ms(self) -> int:
        if self.first is None or self.last is None:
            return 0
        return self.last - self.first + 1000


def run_replay(
    options: ReplayOptions,
    settings: KafkaSettings,
    on_progress: Callable[[int], object] = lambda _n: None,
) -> ReplaySummary:
    """Produce the dataset; ``on_progress`` gets the number of events sent since its last call."""
    summary = ReplaySummary()
    producer = KeyedProducer(settings)
    # Requests go out the moment they are made, on their own connection, as a trigger
    # service would send them: behind the events' batches (10 ms linger, five in flight)
    # they waited for the event firehose (make demo: request→answer p99 130-325 ms).
    request_producer = KeyedProducer(settings, **REQUEST_PRODUCER) if options.request_rate else None
    # Connected before the pacing starts: the first records leave when they are due.
    producer.connect([options.topic])
    if request_producer is not None:
        request_producer.connect([options.request_topic])
    events_out, requests_out = event_codec(), request_codec()
    pacer = Pacer(options.speed)
    sampler = TriggerSampler(options.request_rate, k=options.request_k, seed=options.seed)
    started = time.perf_counter()
    for event in replay_events(options, summary.audit):
        pacer.wait_for(event.ts)
        key = user_key(event.user_id)
        producer.send(options.topic, key, events_out.encode(event))
        summary.events += 1
        request = sampler.after(event)
        if request is not None and request_producer is not None:
            request_producer.send(options.request_topic, key, requests_out.encode(request))
            summary.requests += 1
        if summary.events % 1000 == 0:
            on_progress(1000)
    on_progress(summary.events % 1000)
    summary.delivery = producer.flush()
    if request_producer is not None:
        summary.delivery = summary.delivery.plus(request_producer.flush())
    summary.elapsed_s = time.perf_counter() - started
    return summary
