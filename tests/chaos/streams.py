"""The load of a chaos run: requests and live events at steady rates, poison mixed in.

Both streams keep producing through every fault: the producer buffers while the
broker is away (its delivery timeout is longer than any outage here), as a real
client would. Request ids are unique per pass; events carry the wall clock as
their time, so the feature job's windows fire as they would in production.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.codec import event_codec, request_codec
from schemas.errors import InvalidRecord
from schemas.records import BehaviorEvent, RecRequest

# Longer than the longest outage (45 s) plus the broker's start: nothing is refused locally.
DELIVERY_TIMEOUT_MS = 300_000


def still_poison(raw: bytes, requests: bool) -> bool:
    """Whether the codec refuses ``raw`` now (a mutation can leave a record valid)."""
    codec = request_codec() if requests else event_codec()
    try:
        codec.decode(raw)
    except InvalidRecord:
        return True
    return False


class Paced(threading.Thread):
    """Calls ``emit`` ``rate`` times a second until stopped; counts failed deliveries."""

    def __init__(self, kafka: KafkaSettings, rate: float, name: str) -> None:
        super().__init__(daemon=True, name=name)
        config = kafka.client_config(
            **{
                "linger.ms": 5,
                "enable.idempotence": True,
                "delivery.timeout.ms": DELIVERY_TIMEOUT_MS,
            }
        )
        config["log_level"] = 2  # connection errors during an outage are the point, not news
        self.producer = Producer(config)
        self.rate = rate
        self.failed = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        for n in itertools.count():
            # Paced against the start, so a slow produce call is caught up, not lost.
            if self._stopping.wait(max(0.0, started + n / self.rate - time.monotonic())):
                return
            self.emit(n)
            self.producer.poll(0)

    def emit(self, n: int) -> None:
        raise NotImplementedError

    def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key=key, on_delivery=self._delivered)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _delivered(self, err: object, _message: object) -> None:
        if err is not None:
            self.failed += 1

    def stop(self, flush_timeout_s: float = 300) -> None:
        self._stopping.set()
        self.join()
        left = self.producer.flush(flush_timeout_s)
        if left or self.failed:
            raise RuntimeError(f"{self.name}: {left} undelivered, {self.failed} failed")


class RequestLoad(Paced):
    """Requests with ids ``<prefix>-<n>`` for ``users`` in turn; every ``poison_every``-th
    send is a poison input instead (its bytes kept to find in the dead-letter topic)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        rate: float,
        users: Sequence[int],
        prefix: str,
        poison: Sequence[bytes] = (),
        poison_every: int = 50,
        user_offset: Callable[[], int] = lambda: 0,
    ) -> None:
        super().__init__(kafka, rate, f"requests-{prefix}")
        self.user_offset = user_offset
        self.topic, self.users, self.prefix = topic, list(users), prefix
        self.codec = request_codec()
        self.sent: dict[str, int] = {}
        self.poison_sent: Counter[bytes] = Counter()
        self._poison = iter(poison)
        self.poison_every = poison_every

    def emit(self, n: int) -> None:
        if n % self.poison_every == self.poison_every - 1:
            raw = next(self._poison, None)
            if raw is not None:
                self.send(self.topic, raw, None)
                self.poison_sent[raw] += 1
                return
        user = self.users[n % len(self.users)] + self.user_offset()
        now = int(time.time() * 1000)
        request = RecRequest(request_id=f"{self.prefix}-{n}", user_id=user, ts=now, k=10)
        self.send(self.topic, self.codec.encode(request), str(user).encode())
        self.sent[request.request_id] = now


# Added to every user id on each new lap through the events (``new_users``): far above
# the Taobao ids (under 10^6), far below the largest id a record may carry.
USER_STRIDE = 10_000_000


class EventLoad(Paced):
    """``events`` in a loop, each stamped with the wall clock; poison mixed in as above.

    With ``new_users`` each lap through the events is by users never seen before
    (ids shifted by ``USER_STRIDE`` per lap), as a live service keeps meeting them.
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        rate: float,
        events: Sequence[BehaviorEvent],
        poison: Sequence[bytes] = (),
        poison_every: int = 50,
        new_users: bool = False,
    ) -> None:
        super().__init__(kafka, rate, "events")
        self.topic = topic
        self.codec = event_codec()
        self.sent = 0
        self.poison_sent: Counter[bytes] = Counter()
        self.events = list(events)
        self._poison = iter(poison)
        self.poison_every = poison_every
        self.new_users = new_users

    def user_offset(self) -> int:
        """What the current lap adds to user ids (0 unless ``new_users``)."""
        return USER_STRIDE * (self.sent // len(self.events)) if self.new_users else 0

    def emit(self, n: int) -> None:
        if n % self.poison_every == self.poison_every - 1:
            raw = next(self._poison, None)
            if raw is not None:
                self.send(self.topic, raw, None)
                self.poison_sent[raw] += 1
                return
        event = self.events[self.sent % len(self.events)]
        user = event.user_id + self.user_offset()
        now = int(time.time() * 1000)
        live = BehaviorEvent(user, event.item_id, event.category_id, event.behavior, now)
        self.send(self.topic, self.codec.encode(live), str(live.user_id).encode())
        self.sent += 1
