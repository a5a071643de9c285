"""When a request entered Kafka: where the worker's end-to-end latency starts (pure).

A request's ``ts`` is event time: a replay of 2017 events stamps every request
with 2017, so a latency measured from it reads years (that lag has its own metric,
``streamrec_worker_request_event_lag_seconds``). The latency starts instead at the
record's Kafka timestamp, chosen by its type:

* ``LogAppendTime`` (the project creates its requests topics so,
  :func:`runtime.kafka.request_topic_spec`): the broker's clock when it appended
  the record. Always used.
* ``CreateTime`` (a topic made without that setting): the producer's clock, which a
  producer may set to anything (a replay tool stamping event time). Used only when
  it is neither in the future of the poll nor more than
  :data:`CREATE_TIME_MAX_AGE_MS` before it; otherwise, and for a record without a
  timestamp, the poll time is the start. The poll time is a lower bound: a request
  that waited in a backlog before the poll is measured from the poll.
"""

from __future__ import annotations

from typing import Any

# confluent_kafka.TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME.
NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME = 0, 1, 2
# A create time older than this at the poll is taken for a stamped event time, not a queue:
# five minutes spans a restart's backlog, and is far from any replayed history. A backlog
# older than that on a CreateTime topic is measured from the poll (and reads low).
CREATE_TIME_MAX_AGE_MS = 300_000
# Where a request's latency was measured from: the label values of
# streamrec_worker_latency_origin_total.
FROM_LOG_APPEND = "log_append_time"
FROM_CREATE = "create_time"
FROM_POLL = "poll_time"
ORIGINS = (FROM_LOG_APPEND, FROM_CREATE, FROM_POLL)


def latency_start_ms(
    kind: int, timestamp_ms: int, polled_ms: int, max_age_ms: int = CREATE_TIME_MAX_AGE_MS
) -> tuple[int, str]:
    """When the request entered Kafka, and which of :data:`ORIGINS` says so.

    ``kind`` and ``timestamp_ms`` are the record's Kafka timestamp (its type and value),
    ``polled_ms`` the worker's wall clock when the poll received it.
    """
    if kind == LOG_APPEND_TIME and timestamp_ms > 0:
        return timestamp_ms, FROM_LOG_APPEND
    if kind == CREATE_TIME and polled_ms - max_age_ms <= timestamp_ms <= polled_ms:
        return timestamp_ms, FROM_CREATE
    return polled_ms, FROM_POLL


def message_start_ms(message: Any, polled_ms: int) -> tuple[int, str]:
    """:func:`latency_start_ms` of a consumed message (None: one without a timestamp)."""
    if message is None:
        return polled_ms, FROM_POLL
    kind, timestamp_ms = message.timestamp()
    return latency_start_ms(int(kind), int(timestamp_ms), polled_ms)
