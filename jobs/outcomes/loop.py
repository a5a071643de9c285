"""The outcome job's shell: one consumer over the recommendations and the events topics.

Delivery and state, stated: offsets are committed every ``commit_every_s`` after the
records before them were joined; the open recommendations live in memory only, so a
restart forgets those still open (at most one horizon's worth, counted neither hit nor
miss) and a record re-read after a crash can count twice. The figures are a
monitoring signal, not a ledger. Records that do not decode are skipped and counted;
their dead letters are the feature job's and the worker's to write, not this job's.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException

from jobs.outcomes.join import OutcomeJoin
from jobs.outcomes.metrics import OutcomeMetrics
from jobs.outcomes.settings import OutcomeSettings
from schemas.codec import event_codec, recommendation_codec
from schemas.errors import InvalidRecord

logger = logging.getLogger(__name__)


class OutcomeLoop:
    def __init__(
        self, settings: OutcomeSettings, metrics: OutcomeMetrics, commit_every_s: float = 5.0
    ) -> None:
        self.settings, self.metrics = settings, metrics
        self.join = OutcomeJoin(
            int(settings.horizon_minutes * 60_000),
            int(settings.lateness_seconds * 1000),
            settings.max_open_per_user,
        )
        self._commit_every_s = commit_every_s
        self._consumer = Consumer(
            settings.kafka.client_config(
                **{
                    "group.id": settings.group_id,
                    "client.id": f"streamrec-outcome-{uuid.uuid4().hex[:6]}",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
        )
        self._consumer.subscribe([settings.recommendations_topic, settings.events_topic])

    def run(self, stop: threading.Event, idle_seconds: float | None = None) -> None:
        """Join until stopped, or until nothing arrived for ``idle_seconds``."""
        recs, events = recommendation_codec(), event_codec()
        last_record, last_commit = time.monotonic(), time.monotonic()
        try:
            while not stop.is_set():
                messages = self._consumer.consume(500, timeout=0.5)
                for message in messages:
                    value, topic = message.value(), message.topic()
                    if message.error() is not None or value is None:
                        continue
                    try:
                        if topic == self.settings.recommendations_topic:
                            verdicts = self.join.recommended(recs.decode(value))
                        else:
                            verdicts = self.join.event(events.decode(value))
                    except InvalidRecord:
                        self.metrics.skipped.labels(topic).inc()
                        continue
                    self.metrics.count(verdicts)
                now = time.monotonic()
                if messages:
                    last_record = now
                if now - last_commit >= self._commit_every_s:
                    self._commit()
                    last_commit = now
                self.metrics.open.set(self.join.open_count)
                if idle_seconds is not None and now - last_record > idle_seconds:
                    break
        finally:
            self._commit()
            self._consumer.close()

    def _commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as error:
            # Nothing consumed since the last commit raises too; a real failure is retried
            # by the next commit, the records in between joined again after a restart.
            if error.args[0].code() != KafkaError._NO_OFFSET:
                logger.warning("commit failed, retried at the next one: %s", error)
