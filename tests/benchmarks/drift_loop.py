"""The closed loop of ``make drift-check``: the shifted run's alerts retrain and canary a model.

On the lifecycle stack (:mod:`tests.canary.lifecycle`: the trained ranker served as the
champion, a worker answering a request stream), the replayed Taobao events with the
same category swap as the shifted changelog go onto an events topic, timed to end
now. ``jobs.retrain``'s loop then reads the alerts the shifted drift run published:
sustained drift exports the events, trains a candidate against the champion on the
same held-out rows, registers it in MLflow and, if it is better, runs
``python -m inference.serving canary`` on it. Everything it says is the timeline.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.retrain.loop import RetrainLoop
from jobs.retrain.run import RunReport
from jobs.retrain.settings import RetrainSettings
from runtime.kafka import TopicSpec, ensure_topics
from schemas.codec import wall_clock_ms
from schemas.records import BehaviorEvent
from tests.canary.lifecycle import Lifecycle
from tests.support.events import produce_timed

# Training on the window: bounded so the loop's run takes a minute or two on two cores.
TRAIN_ARGS = "--max-train-rows 30000 --max-eval-rows 2000 --epochs 2"


@dataclass(frozen=True)
class LoopOutcome:
    timeline: list[str]
    report: RunReport | None


def shifted_events(events: Sequence[BehaviorEvent], swap: Mapping[int, int]) -> list[BehaviorEvent]:
    """The events with their categories swapped, moved to end now (time order kept)."""
    shift = wall_clock_ms() - 1000 - max(e.ts for e in events)
    return [
        BehaviorEvent(e.user_id, e.item_id, swap.get(e.category_id, e.category_id), e.behavior,
                      e.ts + shift)
        for e in events
    ]  # fmt: skip


def produce_events(life: Lifecycle, topic: str, events: Sequence[BehaviorEvent]) -> None:
    ensure_topics(life.kafka, [TopicSpec(topic, 4)])
    produce_timed(life.kafka, topic, events)


def closed_loop(
    life: Lifecycle,
    alerts_topic: str,
    events: Sequence[BehaviorEvent],
    model_dir: Path,
    consecutive: int,
    timeout_s: float = 1200.0,
) -> LoopOutcome:
    topic = f"retrain-events-{uuid.uuid4().hex[:8]}"
    produce_events(life, topic, events)
    span_min = (max(e.ts for e in events) - min(e.ts for e in events)) / 60_000
    # The canary and the training run as processes of their own, pointed at this stack.
    os.environ.update(life.serving_env())
    settings = RetrainSettings(
        kafka=life.kafka, alerts_topic=alerts_topic, events_topic=topic,
        group_id=f"retrain-{uuid.uuid4().hex[:8]}", consecutive=consecutive,
        min_interval_s=3600, window_minutes=span_min + 5, champion=model_dir,
        work_dir=life.home / "retrain", train_args=TRAIN_ARGS, canary=True,
        canary_args=f"--steps 50,100 --hold 15s --poll 1s --settle 2s "
                    f"--worker-metrics {life.metrics_url}",
    )  # fmt: skip
    timeline: list[str] = []

    def say(line: str) -> None:
        stamped = line if line.startswith("[") else f"[{time.strftime('%H:%M:%S')}] {line}"
        timeline.append(stamped)
        print(stamped, flush=True)

    loop = RetrainLoop(settings, say)
    stop = threading.Event()
    watcher = threading.Thread(target=loop.watch, args=(stop,), daemon=True)
    watcher.start()
    seen, last_change = 0, time.monotonic()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not loop.reports:
        time.sleep(1.0)
        quiet = len(timeline) == seen and not loop.trigger.running
        if quiet and time.monotonic() - last_change > 60:
            break  # every alert read, no run started: the timeline says why
        if len(timeline) != seen:
            seen, last_change = len(timeline), time.monotonic()
    stop.set()
    watcher.join(timeout=60)
    return LoopOutcome(timeline, loop.reports[0] if loop.reports else None)
