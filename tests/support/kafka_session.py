"""Kafka for one command run: a configured cluster, or the local stack brought up for it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import Stack
from runtime.kafka import KafkaSettings

# What a Kafka run needs; the Flink cluster is started on purpose (`up --services flink`).
_SERVICES = ["kafka", "redis"]


@contextmanager
def kafka_for_run(keep_stack: bool = False) -> Iterator[KafkaSettings]:
    """``STREAMREC_KAFKA_BOOTSTRAP_SERVERS`` if set; else the local stack.

    A stack this started is stopped again on exit unless ``keep_stack``; one that
    was already running is left as it was.
    """
    if os.environ.get("STREAMREC_KAFKA_BOOTSTRAP_SERVERS"):
        yield KafkaSettings.from_env()
        return
    stack = Stack(StackSettings.from_env())
    was_running = all(status.healthy for status in stack.status(_SERVICES))
    stack.up(_SERVICES)
    try:
        yield KafkaSettings(stack.settings.kafka_bootstrap, KafkaSettings.from_env().extra)
    finally:
        if not (keep_stack or was_running):
            print("stopping the local stack", file=sys.stderr)
            stack.down(_SERVICES)
