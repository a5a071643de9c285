"""Topics checked at start: waiting for brokers that are away, within a bound."""

from __future__ import annotations

import time
import uuid

import pytest

from runtime.kafka import MIN_ATTEMPT_S, KafkaSettings, TopicSpec, ensure_topics_once_up
from tests.conftest import free_port

pytestmark = pytest.mark.integration


def test_topics_are_created_once_the_broker_answers(kafka: KafkaSettings) -> None:
    name = f"t-once-up-{uuid.uuid4().hex[:8]}"
    assert ensure_topics_once_up(kafka, [TopicSpec(name, 2)], wait_s=30) == [name]


def test_a_broker_away_for_the_whole_wait_gives_none_after_the_wait_not_at_once() -> None:
    """Without the wait, the first metadata request failed within a second and the part
    crashed (a worker restarted during a broker restart exited 1)."""
    away = KafkaSettings(f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    assert ensure_topics_once_up(away, [TopicSpec("never", 1)], wait_s=6) is None
    # The wait, plus at most one last attempt's floor: not an admin call's default 30 s.
    assert 4 <= time.monotonic() - started < 6 + MIN_ATTEMPT_S + 3
