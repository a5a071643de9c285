"""A stack for the model lifecycle checks: a champion served, a worker answering a stream.

Kafka, Redis, Triton and MLflow on free ports in a folder of its own under
``.stack/``; the trained ranker registered in MLflow as the champion (alias
``champion``), published from there and served; real Taobao features in Redis; one
worker (traffic split on) and a steady stream of requests. ``make canary-check`` and
the closed loop of ``make drift-check`` run on it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from inference.serving import repository
from inference.serving.canary_run import CHAMPION_ALIAS
from inference.serving.control import TritonControl
from inference.serving.registered import publish_registered
from jobs.datasets import RowAudit, read_dataset
from jobs.demo.services import SERVED_MODEL
from jobs.localstack import Stack, StackSettings
from jobs.ranker.registry import log_and_register
from runtime.kafka import KafkaSettings
from runtime.model_registry import REGISTERED_MODEL, RegistryClient
from runtime.online.connect import OnlineClient, connect
from tests.canary.load import RequestStream
from tests.inference.worker.harness import OutputReader, WorkerProcess, WorkerTopics, worker_env
from tests.inference.worker.world import changelog, stream_events, write_features
from tests.support.stacks import own_stack_settings, run_home

PROJECT = "lifecycle"
SERVICES = ["kafka", "redis", "triton", "mlflow"]


@dataclass
class Lifecycle:
    home: Path
    settings: StackSettings
    kafka: KafkaSettings
    redis: OnlineClient
    registry: RegistryClient
    control: TritonControl
    model_dir: Path  # the served model's folder in Triton's repository
    champion: int  # its Triton version
    topics: WorkerTopics
    worker: WorkerProcess
    stream: RequestStream
    reader: OutputReader
    users: list[int]  # the stream's users come from the first half

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.worker.env['STREAMREC_WORKER_METRICS_PORT']}"

    def serving_env(self) -> dict[str, str]:
        """What ``python -m inference.serving`` needs to act on this stack."""
        return {
            "STREAMREC_TRITON_HTTP_URL": self.settings.triton_http_url,
            "STREAMREC_TRITON_MODEL_REPOSITORY": str(self.settings.model_repository),
            "STREAMREC_TRITON_MODEL": SERVED_MODEL,
            "STREAMREC_REDIS_URL": self.settings.redis_url,
            "STREAMREC_WORKER_PROJECT": PROJECT,
            "MLFLOW_TRACKING_URI": self.registry.uri,
        }

    def register(self, label: str, source: Path) -> tuple[str, int]:
        """Register ``source`` and publish it from the registry: (name/version, Triton version)."""
        _, version = log_and_register(
            self.registry, source, run_name=f"lifecycle-{label}", params={"label": label},
            metrics={}, tags={"streamrec.check": label}, description=label,
        )  # fmt: skip
        uri = f"models:/{REGISTERED_MODEL}/{version.version}"
        published = publish_registered(
            uri, self.settings.model_repository, [SERVED_MODEL], self.registry.uri
        )
        say(f"registered {label} as {REGISTERED_MODEL}/{version.version}, "
            f"published as version {published.number}")  # fmt: skip
        return f"{REGISTERED_MODEL}/{version.version}", published.number


@contextmanager
def lifecycle(model_dir: Path, rate: float) -> Iterator[Lifecycle]:
    home = run_home("lifecycle-")
    settings = own_stack_settings(home, triton_models=())  # loaded from the registry below
    stack = Stack(settings)
    say(f"starting Kafka, Redis, Triton and MLflow in {home}")
    stack.up(SERVICES, timeout_s=300)
    try:
        with _served(settings, stack, model_dir, home, rate) as ready:
            yield ready
    finally:
        stack.down(SERVICES)
        say(f"logs kept in {home}")


@contextmanager
def _served(
    settings: StackSettings, stack: Stack, model_dir: Path, home: Path, rate: float
) -> Iterator[Lifecycle]:
    registry = RegistryClient(stack.exports(["mlflow"])["MLFLOW_TRACKING_URI"])
    client = connect(settings.redis_url)
    events = stream_events(20_000)
    say(f"features of {len(events)} Taobao events into Redis")
    write_features(client, PROJECT, changelog(events))
    kafka = KafkaSettings(settings.kafka_bootstrap)
    topics = WorkerTopics.create(kafka, partitions=4)
    env = worker_env(kafka, settings.redis_url, PROJECT, model_dir, topics,
                     (settings.triton_grpc_url, SERVED_MODEL), routing_poll_ms="200",
                     triton_timeout_ms="5000")  # fmt: skip
    users = sorted({e.user_id for e in read_dataset("taobao", None, RowAudit())})
    control = TritonControl(settings.triton_http_url)
    ready = Lifecycle(
        home, settings, kafka, client, registry, control,
        settings.model_repository / SERVED_MODEL, 0, topics,
        WorkerProcess(env, home / "worker.log"),
        RequestStream(kafka, topics.requests, users[: len(users) // 2], rate),
        OutputReader(kafka, topics.output), users,
    )  # fmt: skip
    try:
        registered, ready.champion = ready.register("champion", model_dir)
        registry.set_alias(REGISTERED_MODEL, CHAMPION_ALIAS, registered.rsplit("/", 1)[1])
        config = repository.read_config(ready.model_dir)
        control.load(SERVED_MODEL, repository.with_versions(config, [ready.champion]))
        ready.stream.start()
        ready.reader.read_until(50, timeout_s=180)
        say(f"the worker answers the stream ({rate:g} requests/s)")
        yield ready
    finally:
        ready.stream.stop()
        ready.worker.close()
        ready.reader.close()


def say(text: str) -> None:
    print(f"[lifecycle {time.strftime('%H:%M:%S')}] {text}", flush=True)
