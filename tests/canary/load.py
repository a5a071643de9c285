"""A steady stream of requests with unique ids, for as long as a check runs."""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.codec import request_codec, wall_clock_ms
from schemas.records import RecRequest


class RequestStream(threading.Thread):
    """``rate`` requests/s cycling over ``users``; ``sent`` maps each id to its send time."""

    def __init__(self, kafka: KafkaSettings, topic: str, users: list[int], rate: float) -> None:
        super().__init__(daemon=True, name="request-stream")
        self.kafka = kafka
        self.topic, self.users, self.rate = topic, users, rate
        self.sent: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def run(self) -> None:
        # Made and dropped in this thread: its connections close when the stream ends,
        # not when the stack it talks to is already gone.
        producer = Producer(self.kafka.client_config(**{"linger.ms": 5}))
        codec, cycle = request_codec(), itertools.cycle(self.users)
        began, n = time.monotonic(), 0
        while not self._stopping.is_set():
            # Paced against the start, not the last send: a slow moment is caught up.
            wait = began + n / self.rate - time.monotonic()
            if wait > 0 and self._stopping.wait(wait):
                break
            user, request_id = next(cycle), f"stream-{n}"
            request = RecRequest(request_id, user, wall_clock_ms(), k=10)
            producer.produce(self.topic, codec.encode(request), key=str(user).encode())
            with self._lock:
                self.sent[request_id] = time.time()
            producer.poll(0)
            n += 1
        producer.flush(30)

    def sent_ids(self) -> set[str]:
        """The ids sent so far (a copy, safe while the stream runs)."""
        with self._lock:
            return set(self.sent)

    def stop(self) -> dict[str, float]:
        self._stopping.set()
        if self.is_alive():
            self.join()
        return self.sent
