"""Where a request's end-to-end latency starts: the pure choice of its Kafka timestamp."""

from __future__ import annotations

import pytest

from inference.worker.arrival import (
    CREATE_TIME,
    CREATE_TIME_MAX_AGE_MS,
    FROM_CREATE,
    FROM_LOG_APPEND,
    FROM_POLL,
    LOG_APPEND_TIME,
    NOT_AVAILABLE,
    latency_start_ms,
    message_start_ms,
)

POLLED = 1_760_000_000_000
REPLAYED_2017 = 1_511_539_200_000


def test_the_brokers_append_time_is_always_the_start() -> None:
    assert latency_start_ms(LOG_APPEND_TIME, POLLED - 7, POLLED) == (POLLED - 7, FROM_LOG_APPEND)
    # Even where it reads odd (the broker's clock a little ahead, or a backlog of days):
    # it is the broker's own clock, nothing a producer set.
    assert latency_start_ms(LOG_APPEND_TIME, POLLED + 3, POLLED) == (POLLED + 3, FROM_LOG_APPEND)
    days = POLLED - 3 * 86_400_000
    assert latency_start_ms(LOG_APPEND_TIME, days, POLLED) == (days, FROM_LOG_APPEND)


@pytest.mark.parametrize("age_ms", [0, 12, CREATE_TIME_MAX_AGE_MS])
def test_a_recent_create_time_is_the_start(age_ms: int) -> None:
    at = POLLED - age_ms
    assert latency_start_ms(CREATE_TIME, at, POLLED) == (at, FROM_CREATE)


@pytest.mark.parametrize(
    "stamped",
    [
        REPLAYED_2017,  # a producer that stamped the record with its event time
        POLLED - CREATE_TIME_MAX_AGE_MS - 1,  # just past the bound
        POLLED + 1,  # the producer's clock ahead of the worker's
    ],
)
def test_a_create_time_past_the_bound_or_in_the_future_gives_way_to_the_poll(
    stamped: int,
) -> None:
    assert latency_start_ms(CREATE_TIME, stamped, POLLED) == (POLLED, FROM_POLL)


def test_the_bound_is_a_parameter() -> None:
    assert latency_start_ms(CREATE_TIME, POLLED - 2_000, POLLED, max_age_ms=1_000)[1] == FROM_POLL
    assert latency_start_ms(CREATE_TIME, POLLED - 500, POLLED, max_age_ms=1_000)[1] == FROM_CREATE


def test_no_timestamp_means_the_poll() -> None:
    assert latency_start_ms(NOT_AVAILABLE, -1, POLLED) == (POLLED, FROM_POLL)
    assert latency_start_ms(LOG_APPEND_TIME, 0, POLLED) == (POLLED, FROM_POLL)


class Message:
    def __init__(self, kind: int, ms: int) -> None:
        self._timestamp = (kind, ms)

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp


def test_a_consumed_messages_timestamp_is_read() -> None:
    assert message_start_ms(Message(LOG_APPEND_TIME, POLLED - 4), POLLED) == (
        POLLED - 4,
        FROM_LOG_APPEND,
    )
    assert message_start_ms(Message(CREATE_TIME, REPLAYED_2017), POLLED) == (POLLED, FROM_POLL)
    assert message_start_ms(None, POLLED) == (POLLED, FROM_POLL)


def test_the_constants_are_confluent_kafkas() -> None:
    import confluent_kafka

    assert (NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME) == (
        confluent_kafka.TIMESTAMP_NOT_AVAILABLE,
        confluent_kafka.TIMESTAMP_CREATE_TIME,
        confluent_kafka.TIMESTAMP_LOG_APPEND_TIME,
    )
