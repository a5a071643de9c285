"""The stack a chaos run or a soak owns: Kafka, Redis and Triton on free ports.

The runs stop and kill these services on purpose, so they never share the
developer's stack; everything lives under ``.stack/chaos-<time>`` (logs kept).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from inference.serving import repository
from jobs.datasets import RowAudit, read_dataset
from jobs.demo.loop import part_environment
from jobs.demo.services import SERVED_MODEL
from jobs.localstack import Stack
from runtime.kafka import KafkaSettings
from tests.chaos.passes import ChaosEnv, say
from tests.chaos.streams import still_poison
from tests.conftest import REPO_ROOT
from tests.support.poison import poisoned_events, poisoned_requests, sample
from tests.support.stacks import own_stack_settings

# Kafka's producer refuses a record over 1 MiB; the worker's and job's limits are tested
# at their own edge by the unit fuzzing.
LARGEST_POISON = 900_000
EVENTS = 20_000  # the Taobao stream's first events, replayed in a loop with live times


@contextmanager
def chaos_stack(model_dir: Path, poison: int) -> Iterator[ChaosEnv]:
    """Kafka, Redis and Triton of this run's own (on free ports: faults stop them)."""
    home = REPO_ROOT / ".stack" / f"chaos-{time.strftime('%Y%m%d-%H%M%S')}"
    settings = own_stack_settings(home)
    model_dir = model_dir.resolve()
    repository.publish(model_dir, settings.model_repository)
    stack = Stack(settings)
    say(f"starting Kafka, Redis and Triton in {home}")
    stack.up(["kafka", "redis", "triton"])
    try:
        kafka = KafkaSettings(settings.kafka_bootstrap)
        env = part_environment(kafka, settings.redis_url, {
            "STREAMREC_TRITON_URL": settings.triton_grpc_url,
            "STREAMREC_TRITON_MODEL": SERVED_MODEL,
            "STREAMREC_MODEL_DIR": str(model_dir),
        })  # fmt: skip
        events = list(read_dataset("taobao", None, RowAudit()))[:EVENTS]
        say(f"drawing {poison} poison events and requests")
        yield ChaosEnv(
            stack=stack,
            kafka=kafka,
            redis_url=settings.redis_url,
            env=env,
            model_dir=model_dir,
            log_dir=home / "parts",
            events=events,
            users=sorted({event.user_id for event in events}),
            poison_requests=drawn_poison(True, poison),
            poison_events=drawn_poison(False, poison),
        )
    finally:
        stack.down(["kafka", "redis", "triton"])
        # The logs stay for a post-mortem; the data (topics, the store) is of no use.
        data = [home / "kafka" / "data", home / "redis" / "appendonlydir", home / "models"]
        for path in data + list(home.glob("parts/*/checkpoints")):
            shutil.rmtree(path, ignore_errors=True)
        say(f"logs kept in {home}")


def drawn_poison(requests: bool, n: int) -> list[bytes]:
    if n <= 0:
        return []
    strategy = poisoned_requests() if requests else poisoned_events()
    return [raw for raw in sample(strategy, n, LARGEST_POISON) if still_poison(raw, requests)]
