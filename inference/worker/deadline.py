"""Per-request deadline: a request that waited too long is answered at once, flagged.

A request's age is measured from its Kafka timestamp (when it was produced or
appended), not from its ``ts``: replays and triggers stamp requests with event
time, which may be hours old. A request older than ``STREAMREC_WORKER_DEADLINE_MS``
when its batch is about to be ranked is not sent to the ranker: it gets the
fallback ranking of its candidates at once and the reason ``deadline_exceeded``,
so a backlog drains instead of queueing ever later work on Triton. It is
answered, never dropped. 0 turns the deadline off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DEADLINE_EXCEEDED = "deadline_exceeded"
# confluent_kafka.TIMESTAMP_NOT_AVAILABLE: a message without a timestamp.
_NO_TIMESTAMP = 0


def appended_ms(message: Any) -> int | None:
    """The Kafka timestamp of a consumed message; None when it has none."""
    if message is None:
        return None
    kind, ms = message.timestamp()
    return int(ms) if kind != _NO_TIMESTAMP and ms > 0 else None


def late_positions(appended: Sequence[int | None], now_ms: int, deadline_ms: int) -> frozenset[int]:
    """Positions of the requests older than ``deadline_ms`` at ``now_ms`` (pure)."""
    if deadline_ms <= 0:
        return frozenset()
    return frozenset(
        n for n, at in enumerate(appended) if at is not None and now_ms - at > deadline_ms
    )
