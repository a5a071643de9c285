"""Default topic names; every one can be overridden per process."""

from __future__ import annotations

USER_BEHAVIOR = "user-behavior"
# Created with the broker's append time as record timestamp (runtime.kafka.request_topic_spec).
REC_REQUESTS = "rec-requests"
RECOMMENDATIONS = "recommendations"
FEATURE_UPDATES = "feature-updates"
FEATURE_DRIFT = "feature-drift"

DEAD_LETTER_SUFFIX = ".dlq"


def dead_letter_topic(source_topic: str) -> str:
    """The dead-letter topic that receives the bad records of ``source_topic``."""
    return source_topic + DEAD_LETTER_SUFFIX
