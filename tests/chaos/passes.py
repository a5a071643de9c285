"""The chaos passes: the whole pipeline under load through a schedule of faults.

A *fault pass* runs the feature job, the feature writer and one worker (in one
delivery mode) on topics of its own, feeds them requests and live events with
poison mixed in, injects every fault of the schedule with a settling time in
between, then stops the load, waits for the answers, stops the parts with
SIGTERM and reads every topic back (read-committed) into a :class:`Ledger`.

The *churn pass* runs exactly-once workers on four partitions while workers are
added, stopped with SIGTERM and killed with -9 in turn.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from inference.worker.inventory import inventory_key, mark
from jobs.demo.loop import (
    RunTopics,
    feature_job_part,
    free_port,
    log_says,
    port_open,
    wait_ready,
    warm_up,
    writer_part,
)
from jobs.demo.processes import Part
from jobs.localstack import Stack
from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from runtime.online.connect import connect
from schemas.codec import dead_letter_codec, recommendation_codec
from schemas.records import BehaviorEvent
from schemas.topics import dead_letter_topic
from schemas.views import PROJECT
from tests.chaos.faults import Fault, run_fault, store_losses, store_snapshot
from tests.chaos.ledger import FaultWindow, Ledger, baseline_window
from tests.chaos.streams import EventLoad, RequestLoad
from tests.chaos.supervisor import kill, supervised

T = TypeVar("T")


@dataclass(frozen=True)
class ChaosEnv:
    """What every pass shares: the stack, the model, the data and the poison."""

    stack: Stack
    kafka: KafkaSettings
    redis_url: str
    env: dict[str, str]  # the parts' environment (endpoints, model)
    model_dir: Path
    log_dir: Path
    events: Sequence[BehaviorEvent]
    users: Sequence[int]
    poison_requests: Sequence[bytes]
    poison_events: Sequence[bytes]


@dataclass(frozen=True)
class PassConfig:
    rate: float = 200.0  # requests/s
    event_rate: float = 200.0  # events/s
    settle_s: float = 20.0  # load before the first fault and after each one
    poison_every: int = 50  # one send in this many is poison
    stall_s: float = 60.0  # no progress this long after the load ends: the wait is over
    out_of_stock: int = 20  # items marked out of stock before the load starts


def say(text: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def worker_part(
    topics: RunTopics, group: str, model_dir: Path, log_dir: Path, name: str, **settings: str
) -> Part:
    env = {f"STREAMREC_WORKER_{k.upper()}": v for k, v in settings.items()}
    args = ["--requests-topic", topics.requests, "--output-topic", topics.recommendations,
            "--group-id", group, "--model-dir", str(model_dir),
            "--metrics-port", str(free_port())]  # fmt: skip
    return Part(name, "inference.worker", args, log_dir, env=env)


def worker_port(part: Part) -> int:
    return int(part.argv[part.argv.index("--metrics-port") + 1])


def mode_settings(exactly_once: bool, log_dir: Path) -> dict[str, str]:
    if not exactly_once:
        return {}
    return {"exactly_once": "true", "instance_lock_dir": str(log_dir / "slots")}


def feature_job(topics: RunTopics, run_id: str, log_dir: Path) -> Part:
    """The feature job with checkpoints, restoring the latest one whenever it restarts."""
    part = feature_job_part(topics.events, topics.changelog, run_id, log_dir)
    part.argv += ["--checkpoint-dir", str(log_dir / "checkpoints"), "--restore-from", "auto"]
    return part


def fault_pass(
    chaos: ChaosEnv, exactly_once: bool, faults: Sequence[Fault], config: PassConfig
) -> Ledger:
    mode = "exactly-once" if exactly_once else "at-least-once"
    run_id = f"chaos-{mode}-{time.strftime('%H%M%S')}"
    topics = RunTopics.for_run(run_id)
    topics.create(chaos.kafka)
    log_dir = chaos.log_dir / run_id
    ledger = Ledger(mode, exactly_once)
    worker = worker_part(
        topics, run_id, chaos.model_dir, log_dir, "worker", **mode_settings(exactly_once, log_dir)
    )
    parts = [
        feature_job(topics, run_id, log_dir),
        writer_part(topics.changelog, run_id, log_dir),
        worker,
    ]
    client = connect(chaos.redis_url)
    inventory = inventory_key(PROJECT)
    with supervised(chaos.env, parts) as supervisor, closing(client):
        say(f"{mode}: parts starting (logs in {log_dir})")
        ready = {"feature job": log_says(parts[0], "job id"),
                 "worker": port_open(worker_port(worker))}  # fmt: skip
        wait_ready(parts, ready)
        warm_up(chaos.kafka, chaos.redis_url, topics.events, int(time.time() * 1000), parts)
        mark(client, [e.item_id for e in chaos.events[: config.out_of_stock]], project=PROJECT)
        supervisor.start()
        events = EventLoad(chaos.kafka, topics.events, config.event_rate, chaos.events,
                           chaos.poison_events, config.poison_every)  # fmt: skip
        requests = RequestLoad(chaos.kafka, topics.requests, config.rate, chaos.users, mode,
                               chaos.poison_requests, config.poison_every)  # fmt: skip
        events.start()
        requests.start()
        loaded_at = int(time.time() * 1000)
        time.sleep(config.settle_s)
        ledger.baseline = baseline_window(loaded_at, int(time.time() * 1000))
        for fault in faults:
            say(f"{mode}: {fault.name}")
            loses_memory = fault.kills and fault.service == "redis"
            before = store_snapshot(client, inventory) if loses_memory else None
            ledger.faults.append(run_fault(chaos.stack, fault))
            if before is not None:
                ledger.store_losses += store_losses(before, client, inventory)
            time.sleep(config.settle_s)
        requests.stop()
        events.stop()
        say(f"{mode}: load stopped; {len(requests.sent)} requests sent, waiting for answers")
        drain(chaos.kafka, topics, len(requests.sent), config.stall_s)
    ledger.sent = dict(requests.sent)
    ledger.poison_sent = requests.poison_sent + events.poison_sent
    ledger.crashed, ledger.restarts = supervisor.crashed, supervisor.restarts
    read_outcome(chaos.kafka, topics, ledger)
    return ledger


def drain(kafka: KafkaSettings, topics: RunTopics, expected: int, stall_s: float) -> None:
    """Wait until ``expected`` answers are in, or until the pipeline stops making progress.

    An overloaded pipeline works through its backlog for minutes after the load
    stops, so a fixed wait would count late answers as lost. Progress is any
    growth of the answers, the changelog or the dead letters; ``stall_s`` of none
    ends the wait (a request still unanswered then is lost).
    """
    watched = [topics.recommendations, topics.changelog,
               dead_letter_topic(topics.requests), dead_letter_topic(topics.events)]  # fmt: skip
    last: list[int] = []
    still_since = shown = time.monotonic()
    while True:
        counts = [records_in(kafka, topic) for topic in watched]
        if counts != last:
            last, still_since = counts, time.monotonic()
        if time.monotonic() - shown >= 15:
            say(f"draining: {counts[0]} of {expected} answers (offsets, markers included)")
            shown = time.monotonic()
        # All answered: only the feature path may still be busy; a short quiet ends it.
        quiet_s = 15.0 if counts[0] >= expected else stall_s
        if time.monotonic() - still_since >= quiet_s:
            return
        time.sleep(2.0)


def records_in(kafka: KafkaSettings, topic: str) -> int:
    """The topic's end offsets summed; 0 for a topic nobody created (the churn pass runs
    no feature job, so it has no changelog)."""
    try:
        return sum(high_watermarks(kafka, topic).values())
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise
        return 0


def read_outcome(kafka: KafkaSettings, topics: RunTopics, ledger: Ledger) -> None:
    """Answers (read-committed: aborted transactions never count) and dead letters."""
    ledger.answers = read_all(kafka, topics.recommendations, recommendation_codec().decode)
    letters = [
        letter
        for source in (topics.requests, topics.events)
        for letter in read_all(kafka, dead_letter_topic(source), dead_letter_codec().decode)
    ]
    ledger.dead_letters = Counter(letter.original for letter in letters)
    valid = [letter for letter in letters if letter.original not in ledger.poison_sent]
    late = [v.source_topic == topics.events and v.error_kind == "late" for v in valid]
    ledger.late_events = sum(late)
    ledger.unexpected_dead_letters = Counter(
        f"{letter.source_topic} {letter.error_kind}: {letter.error[:120]}"
        for letter, is_late in zip(valid, late, strict=True)
        if not is_late
    )


def read_all(kafka: KafkaSettings, topic: str, decode: Callable[[bytes], T]) -> list[T]:
    ends = high_watermarks(kafka, topic)
    return [decode(message.value()) for message in read_range(kafka, topic, {}, ends)]


@dataclass(frozen=True)
class ChurnConfig:
    rate: float = 300.0
    seconds: float = 180.0
    every_s: float = 20.0
    stall_s: float = 60.0


def churn_pass(chaos: ChaosEnv, config: ChurnConfig) -> Ledger:
    """Exactly-once workers (4 partitions) while one is added, stopped or killed every
    ``every_s``: each id answered once, and no worker may exit on its own (fencing)."""
    run_id = f"chaos-churn-{time.strftime('%H%M%S')}"
    topics = RunTopics.for_run(run_id)
    topics.create(chaos.kafka)
    log_dir = chaos.log_dir / run_id
    ledger = Ledger("churn", exactly_once=True)
    settings = mode_settings(True, log_dir)
    names = (f"worker-{n}" for n in itertools.count())

    def new_worker() -> Part:
        return worker_part(topics, run_id, chaos.model_dir, log_dir, next(names), **settings)

    running = [new_worker(), new_worker()]
    with supervised(chaos.env, running) as supervisor:
        wait_ready(running, {p.name: port_open(worker_port(p)) for p in running})
        supervisor.start()
        requests = RequestLoad(chaos.kafka, topics.requests, config.rate, chaos.users, "churn")
        requests.start()
        actions = itertools.cycle(["add", "term", "add", "kill"])
        until = time.monotonic() + config.seconds
        while time.monotonic() < until:
            time.sleep(config.every_s)
            action = next(actions)
            started = int(time.time() * 1000)
            if action == "add" or len(running) < 2:
                running.append(new_worker())
                supervisor.start_part(running[-1])
            elif action == "term":
                supervisor.release(running.pop(0)).stop()
            else:
                kill(supervisor.release(running.pop(0)))
            say(f"churn: {action} ({len(running)} workers)")
            ledger.faults.append(FaultWindow(f"worker {action}", started, started))
        requests.stop()
        drain(chaos.kafka, topics, len(requests.sent), config.stall_s)
    ledger.sent = dict(requests.sent)
    ledger.crashed, ledger.restarts = supervisor.crashed, supervisor.restarts
    read_outcome(chaos.kafka, topics, ledger)
    return ledger
