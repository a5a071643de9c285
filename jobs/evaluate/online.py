"""The replayed period through the running loop, once, answered by every variant at the same time.

Kafka → the Flink feature job → the feature writer → Redis feeds the streaming
store; the batch store is the same materialization of the training prefix,
frozen. One worker per variant consumes the same request topic (its own
consumer group, its own output topic), so every variant answers exactly the
same requests at the same moments:

* ``stream``: the full pipeline on streaming features, triggers folded in;
* ``batch``: the same worker on the frozen store, triggers ignored (a daily
  materialization knows nothing of today);
* ``norank``: streaming features and recall, but candidates in the recall
  merge's order, no ranker;
* ``recent-first``: streaming features and recall, the user's own items by
  recency first, then the merge's order: the heuristic a ranker must beat too;
* ``stream-exclude-viewed`` (on request, ``--variants``): the full pipeline never
  recommending just-viewed items back, to measure that post-processing choice.

Popularity needs no worker: its answer is the model's popular list for everyone.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from jobs.demo.loop import (
    feature_job_part,
    free_port,
    log_says,
    part_environment,
    port_open,
    read_answered,
    wait_for_answers,
    wait_ready,
    warm_up,
    writer_part,
)
from jobs.demo.processes import Part, running
from jobs.demo.services import SERVED_MODEL, Services
from jobs.replay.pacing import Pacer
from jobs.replay.producer import KeyedProducer, user_key
from runtime.kafka import (
    KafkaSettings,
    TopicSpec,
    dead_letter_spec,
    ensure_topics,
    request_topic_spec,
)
from schemas.codec import event_codec, request_codec
from schemas.records import BehaviorEvent, Recommendation, RecRequest
from schemas.topics import dead_letter_topic

PARTITIONS = 4


@dataclass(frozen=True)
class Variant:
    """One worker configuration answering the replay's requests."""

    name: str
    store: str  # "stream" or "batch": which Redis namespace it reads
    worker: Mapping[str, str]  # STREAMREC_WORKER_* settings over the defaults


VARIANTS = (
    Variant("stream", "stream", {}),
    Variant("batch", "batch", {"FOLD_TRIGGER": "false", "FRESH_WAIT_MS": "0"}),
    Variant("norank", "stream", {"SCORER": "none"}),
    Variant("recent-first", "stream", {"SCORER": "recent-first"}),
)
ON_REQUEST = (Variant("stream-exclude-viewed", "stream", {"EXCLUDE_BEHAVIORS": "pv,buy"}),)


def variant(name: str) -> Variant:
    for v in (*VARIANTS, *ON_REQUEST):
        if v.name == name:
            return v
    raise ValueError(
        f"unknown variant {name!r}; known: {', '.join(v.name for v in (*VARIANTS, *ON_REQUEST))}"
    )


@dataclass(frozen=True)
class RunNames:
    """Topics and Redis namespaces of one evaluation run: runs never read each other."""

    run_id: str

    @property
    def events(self) -> str:
        return f"{self.run_id}.user-behavior"

    @property
    def requests(self) -> str:
        return f"{self.run_id}.rec-requests"

    @property
    def changelog(self) -> str:
        return f"{self.run_id}.features"

    def output(self, name: str) -> str:
        return f"{self.run_id}.recommendations.{name}"

    def project(self, store: str) -> str:
        # Feast project names are identifiers: letters, digits and underscores.
        return f"{self.run_id}_{store}".replace("-", "_").replace(".", "_")

    def create(self, kafka: KafkaSettings, variants: Sequence[Variant]) -> None:
        names = [self.events, *(self.output(v.name) for v in variants)]
        specs = [TopicSpec(name, PARTITIONS) for name in names]
        specs.append(request_topic_spec(self.requests, PARTITIONS))
        specs += [dead_letter_spec(dead_letter_topic(t)) for t in (self.events, self.requests)]
        ensure_topics(kafka, specs)


def parts_for(
    names: RunNames, variants: Sequence[Variant], model_dir: Path, log_dir: Path
) -> tuple[list[Part], dict[str, int]]:
    """The feature job, the writer into the streaming store, one worker per variant."""
    parts = [
        feature_job_part(names.events, names.changelog, names.run_id, log_dir),
        writer_part(names.changelog, names.run_id, log_dir, names.project("stream")),
    ]
    ports: dict[str, int] = {}
    for v in variants:
        ports[v.name] = free_port()
        settings = {
            "PROJECT": names.project(v.store),
            "REQUESTS_TOPIC": names.requests,
            "OUTPUT_TOPIC": names.output(v.name),
            "GROUP_ID": f"{names.run_id}.{v.name}",
            "METRICS_PORT": str(ports[v.name]),
            "MODEL_DIR": str(model_dir),
            **v.worker,
        }
        env = {f"STREAMREC_WORKER_{k}": value for k, value in settings.items()}
        env["STREAMREC_MODEL_DIR"] = str(model_dir)
        parts.append(Part(f"worker-{v.name}", "inference.worker", [], log_dir, env))
    return parts, ports


def replay(
    kafka: KafkaSettings,
    names: RunNames,
    events: Sequence[BehaviorEvent],
    asks: Sequence[bool],
    speed: float,
    k: int,
    progress: Callable[[int], object] = lambda _n: None,
) -> list[RecRequest]:
    """Send the events paced by event time, each asked-for one followed at once by a request."""
    producer = KeyedProducer(kafka)
    events_out, requests_out = event_codec(), request_codec()
    pacer = Pacer(speed)
    sent: list[RecRequest] = []
    for n, (event, ask) in enumerate(zip(events, asks, strict=True)):
        pacer.wait_for(event.ts)
        key = user_key(event.user_id)
        producer.send(names.events, key, events_out.encode(event))
        if ask:
            request = RecRequest(f"eval-{n}", event.user_id, event.ts, k=k, trigger=event)
            producer.send(names.requests, key, requests_out.encode(request))
            sent.append(request)
        progress(1)
    stats = producer.flush()
    if stats.failed or stats.pending:
        raise RuntimeError(f"replay lost records: {stats.failed} failed, {stats.pending} pending")
    return sent


def run_online(
    services: Services,
    names: RunNames,
    variants: Sequence[Variant],
    model_dir: Path,
    log_dir: Path,
    events: Sequence[BehaviorEvent],
    asks: Sequence[bool],
    speed: float,
    k: int,
    answer_timeout_s: float,
) -> dict[str, dict[str, Recommendation]]:
    """Each variant's answers by request id, after the whole replay."""
    names.create(services.kafka, variants)
    env = part_environment(
        services.kafka,
        services.redis_url,
        {"STREAMREC_TRITON_URL": services.triton_url, "STREAMREC_TRITON_MODEL": SERVED_MODEL},
    )
    parts, ports = parts_for(names, variants, model_dir, log_dir)
    with running(parts, env):
        print(f"starting the feature job, writer and {len(variants)} workers (logs in {log_dir})",
              file=sys.stderr)  # fmt: skip
        checks = {"feature job": log_says(parts[0], "job id")}
        checks |= {f"worker {name}": port_open(port) for name, port in ports.items()}
        wait_ready(parts, checks)
        warm_up(services.kafka, services.redis_url, names.events, events[0].ts, parts,
                project=names.project("stream"))  # fmt: skip
        started_at = time.monotonic()
        with tqdm(total=len(events), unit="ev", desc="replay", file=sys.stderr) as bar:
            requests = replay(services.kafka, names, events, asks, speed, k, bar.update)
        print(f"replayed {len(events)} events and {len(requests)} requests in "
              f"{time.monotonic() - started_at:.0f} s", file=sys.stderr)  # fmt: skip
        answers = {}
        for v in variants:
            topic = names.output(v.name)
            wait_for_answers(services.kafka, topic, len(requests), parts, answer_timeout_s)
            answers[v.name] = {
                a.recommendation.request_id: a.recommendation
                for a in read_answered(services.kafka, topic)
            }
    return answers
