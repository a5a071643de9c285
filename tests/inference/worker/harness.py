"""Run the worker as a subprocess and talk to it through Kafka, for the integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics, request_topic_spec
from runtime.online.feast_environment import without_feast_metrics
from schemas.codec import dead_letter_codec, recommendation_codec, request_codec
from schemas.records import DeadLetter, Recommendation, RecRequest
from schemas.topics import dead_letter_topic
from tests.conftest import REPO_ROOT, free_port


@dataclass(frozen=True)
class WorkerTopics:
    requests: str
    output: str

    @property
    def dlq(self) -> str:
        return dead_letter_topic(self.requests)

    @classmethod
    def create(cls, kafka: KafkaSettings, partitions: int = 4) -> WorkerTopics:
        stem = f"w-{uuid.uuid4().hex[:8]}"
        topics = cls(f"{stem}-requests", f"{stem}-recs")
        specs = [
            request_topic_spec(topics.requests, partitions),
            TopicSpec(topics.output, partitions),
        ]
        ensure_topics(kafka, [*specs, TopicSpec(topics.dlq, 1)])
        return topics


def worker_env(
    kafka: KafkaSettings,
    redis_url: str,
    project: str,
    model_dir: Path,
    topics: WorkerTopics,
    triton: tuple[str, str] = ("127.0.0.1:1", "ranker_python"),
    **worker: str,
) -> dict[str, str]:
    """The environment of one worker process; ``worker`` are STREAMREC_WORKER_* overrides."""
    env = {
        **without_feast_metrics(os.environ),
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMREC_REDIS_URL": redis_url,
        "STREAMREC_MODEL_DIR": str(model_dir),
        "STREAMREC_WORKER_PROJECT": project,
        "STREAMREC_TRITON_URL": triton[0],
        "STREAMREC_TRITON_MODEL": triton[1],
        "STREAMREC_WORKER_REQUESTS_TOPIC": topics.requests,
        "STREAMREC_WORKER_OUTPUT_TOPIC": topics.output,
        "STREAMREC_WORKER_GROUP_ID": f"g-{topics.requests}",
        "STREAMREC_WORKER_METRICS_PORT": str(free_port()),
        "STREAMREC_WORKER_RETRY_AFTER_MS": "500",
    }
    env.update({f"STREAMREC_WORKER_{k.upper()}": v for k, v in worker.items()})
    return env


class WorkerProcess:
    """``python -m inference.worker`` with its output in a log file."""

    def __init__(self, env: dict[str, str], log: Path, module: str = "inference.worker") -> None:
        self.log = log
        self.env = env
        self._handle = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=REPO_ROOT, env=env, stdout=self._handle, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def terminate(self, timeout_s: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        self._handle.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def metrics(self) -> str:
        """The worker's Prometheus exposition text."""
        port = self.env["STREAMREC_WORKER_METRICS_PORT"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text: str = response.read().decode()
            return text

    def samples(self) -> Samples:
        """The worker's samples: (sample name, its labels) -> value."""
        return samples(self.metrics())


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(figures: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 when it is not exposed."""
    return figures.get((name, frozenset(labels.items())), 0.0)


def produce(kafka: KafkaSettings, topic: str, requests: Iterable[RecRequest | bytes]) -> int:
    producer = Producer(kafka.client_config(**{"linger.ms": 5}))
    codec = request_codec()
    n = 0
    for item in requests:
        if isinstance(item, RecRequest):
            producer.produce(topic, codec.encode(item), key=str(item.user_id).encode())
        else:
            producer.produce(topic, item)
        n += 1
        if n % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    return n


class OutputReader:
    """Reads a topic from the beginning; keeps everything seen so far."""

    def __init__(self, kafka: KafkaSettings, topic: str, read_committed: bool = False) -> None:
        config = kafka.client_config(
            **{
                "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            }
        )
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic])
        self.topic = topic
        self.raw: list[bytes] = []

    def read_until(self, count: int, timeout_s: float, settle_s: float = 0.0) -> list[bytes]:
        """Until ``count`` records were seen, then ``settle_s`` longer (to catch extras).

        Fails loudly if ``count`` is not reached within ``timeout_s``: a silent
        timeout would leave the caller asserting on whatever had arrived.
        """
        deadline = time.monotonic() + timeout_s
        while len(self.raw) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{len(self.raw)} of {count} records on {self.topic} within {timeout_s} s"
                )
            self._poll()
        self.settle(settle_s)
        return self.raw

    def settle(self, seconds: float) -> list[bytes]:
        """Keep reading for ``seconds`` (duplicates or stragglers land in ``raw``)."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            self._poll()
        return self.raw

    def _poll(self) -> None:
        for message in self.consumer.consume(1000, timeout=0.2):
            value = message.value()
            if message.error() is None and value is not None:
                self.raw.append(value)

    def recommendations(self) -> list[Recommendation]:
        codec = recommendation_codec()
        return [codec.decode(raw) for raw in self.raw]

    def dead_letters(self) -> list[DeadLetter]:
        codec = dead_letter_codec()
        return [codec.decode(raw) for raw in self.raw]

    def close(self) -> None:
        self.consumer.close()
