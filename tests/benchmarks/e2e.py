"""``make bench-e2e``: request → recommendation latency and throughput, side by side.

One run starts its own Kafka, Redis and Triton on free ports, writes real Taobao
users' features through the feature writer's path, and measures three workers on
the same requests, model and candidates:

- **worker** — ``python -m inference.worker``: micro-batches, one Redis pipeline
  per round trip, users batched per Triton request, asynchronous, overlapped;
- **naive** — ``python -m tests.benchmarks.baselines.naive_worker``: one message at a time, Feast
  SDK reads, one blocking Triton call per request, flush and commit per message;
- **ceiling** — the worker with in-process ONNX Runtime scoring of the same
  candidates instead of Triton (what this box can do without a network hop).

All three run at once, idle but for the one being measured. Saturation
throughput (good answers over the span from a burst's first send to its last
answer; every variant gets the same ``--burst``) is measured in alternating
rounds and the median kept, because the machine is shared. Then each runs at a
fixed rate of half its own saturation throughput, and at one common rate.

Only good answers count: a degraded (fallback) answer is reported but is a
failure, like a request never answered. Latency p50/p95/p99 runs from the
request's send to the answer's arrival at a real consumer, with every failure
counted at +infinity (beyond any deadline); the error rate is failures over
requests sent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer

from inference.serving import repository
from jobs.localstack import Stack, StackSettings
from runtime.kafka import KafkaSettings
from schemas.codec import recommendation_codec, request_codec, wall_clock_ms
from schemas.records import RecRequest
from tests.benchmarks.measured import Measured, combined, median_burst, tally
from tests.benchmarks.report import print_table, result_line, save_bar_plot
from tests.conftest import REPO_ROOT, free_port
from tests.feature_repo.applied import applied_copy
from tests.inference.worker.harness import WorkerProcess, WorkerTopics, worker_env
from tests.inference.worker.world import (
    World,
    build_world,
    changelog,
    stream_events,
    write_features,
)

REPORT = REPO_ROOT / "reports" / "bench-e2e.png"


class Collector:
    """A real consumer of the recommendations topic: arrival time of each answer."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self._consumer = Consumer(kafka.client_config(**{
            "group.id": f"bench-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "fetch.wait.max.ms": 5,
        }))  # fmt: skip
        self._consumer.subscribe([topic])
        self.arrived: dict[str, tuple[int, bool]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        codec = recommendation_codec()
        while not self._stop.is_set():
            # consume(n, timeout) waits out the whole timeout unless n messages come, which
            # would add up to that timeout to every latency; poll() returns on the first.
            messages = self._consumer.consume(500, timeout=0)
            if not messages:
                first = self._consumer.poll(0.05)
                messages = [] if first is None else [first]
            now = time.time_ns()
            for message in messages:
                value = message.value()
                if message.error() is None and value is not None:
                    rec = codec.decode(value)
                    self.arrived.setdefault(rec.request_id, (now, rec.degraded))

    def wait_for(self, ids: Sequence[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not all(i in self.arrived for i in ids):
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


def send(
    kafka: KafkaSettings, topic: str, users: Sequence[int], prefix: str, rate: float | None
) -> dict[str, int]:
    """Requests to ``users``, at ``rate`` per second (None: as fast as possible); send times."""
    producer = Producer(kafka.client_config(**{"linger.ms": 0, "acks": "1"}))
    codec = request_codec()
    sent: dict[str, int] = {}
    start = time.perf_counter()
    for n, user in enumerate(users):
        if rate:
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        request = RecRequest(request_id=f"{prefix}-{n}", user_id=user, ts=wall_clock_ms(), k=10)
        sent[request.request_id] = time.time_ns()
        producer.produce(topic, codec.encode(request), key=str(user).encode())
        producer.poll(0)
    producer.flush(30)
    return sent


def measure(
    kafka: KafkaSettings, topics: WorkerTopics, collector: Collector, users: Sequence[int],
    prefix: str, rate: float | None, timeout_s: float,
) -> Measured:  # fmt: skip
    sent = send(kafka, topics.requests, users, prefix, rate)
    collector.wait_for(list(sent), timeout_s)
    return tally(sent, collector.arrived)


@dataclass
class VariantResult:
    name: str
    bursts: list[Measured]
    half: Measured
    common: Measured

    @property
    def saturation(self) -> Measured:
        return median_burst(self.bursts)

    @property
    def total(self) -> Measured:
        """Every measured request of this variant (bursts, half load, common rate)."""
        return combined([*self.bursts, self.half, self.common])


PARTITIONS = 4  # of each variant's request topic: room for a group of up to four


@dataclass
class Running:
    """One variant's worker processes (one consumer group), its topics and the consumer
    of its answers."""

    name: str
    topics: WorkerTopics
    processes: list[WorkerProcess]
    collector: Collector
    triton_metrics: str = ""  # Triton's /metrics URL, for its share of the rank stage

    def output(self) -> str:
        return "\n".join(process.output()[-3000:] for process in self.processes)

    def close(self) -> None:
        self.collector.close()
        for process in self.processes:
            if process.process.poll() is None:
                process.terminate(120)
            process.close()


def start_variant(
    name: str, module: str, env: dict[str, str], kafka: KafkaSettings, log_dir: Path,
    replicas: int = 1,
) -> Running:  # fmt: skip
    topics = WorkerTopics.create(kafka, partitions=PARTITIONS)
    env = {**env, "STREAMREC_WORKER_REQUESTS_TOPIC": topics.requests,
           "STREAMREC_WORKER_OUTPUT_TOPIC": topics.output,
           "STREAMREC_WORKER_GROUP_ID": f"bench-{name}-{uuid.uuid4().hex[:6]}"}  # fmt: skip
    processes = [
        WorkerProcess(
            {**env, "STREAMREC_WORKER_METRICS_PORT": str(free_port())},
            log_dir / f"{name}-{n}.log",
            module,
        )
        for n in range(replicas)
    ]
    return Running(name, topics, processes, Collector(kafka, topics.output))


def warm_up(running: Sequence[Running], kafka: KafkaSettings, world: World) -> None:
    """Requests to each variant until all are answered before anything is timed: twenty
    per worker process, over users spread on every partition, so each process of a
    group has answered before it is measured."""
    for v in running:
        count = 20 * len(v.processes)
        warm = measure(kafka, v.topics, v.collector, cycle(world.users, count),
                       f"{v.name}-warm", None, 300)  # fmt: skip
        if warm.answered < count:
            raise RuntimeError(f"{v.name} missed the warm-up:\n{v.output()}")


def saturation_bursts(
    running: Sequence[Running], kafka: KafkaSettings, world: World, args: argparse.Namespace
) -> dict[str, list[Measured]]:
    """``args.rounds`` alternating rounds of one ``args.burst`` per variant (closed loop)."""
    bursts: dict[str, list[Measured]] = {v.name: [] for v in running}
    for round_no in range(args.rounds):
        for v in running:
            tag = f"{v.name}-sat{round_no}"
            burst = measure(kafka, v.topics, v.collector, cycle(world.users, args.burst), tag,
                            None, args.timeout)  # fmt: skip
            bursts[v.name].append(burst)
            print(f"round {round_no} {v.name}: {burst.rps:.0f} rps, {burst.degraded} degraded, "
                  f"{burst.sent - burst.answered} unanswered", flush=True)  # fmt: skip
    return bursts


def run_variants(
    running: list[Running], kafka: KafkaSettings, world: World, args: argparse.Namespace
) -> list[VariantResult]:
    """Warm-up, then saturation bursts in alternating rounds (median), then fixed rates."""
    users = world.users
    warm_up(running, kafka, world)
    bursts = saturation_bursts(running, kafka, world, args)
    results = []
    for v in running:
        saturation = median_burst(bursts[v.name])
        rate = max(1.0, saturation.rps / 2)
        count = max(20, int(rate * args.seconds))
        half = measure(kafka, v.topics, v.collector, cycle(users, count), f"{v.name}-half",
                       rate, args.timeout)  # fmt: skip
        count = max(20, int(args.common_rate * args.seconds))
        common = measure(kafka, v.topics, v.collector, cycle(users, count), f"{v.name}-common",
                         args.common_rate, args.timeout)  # fmt: skip
        print(f"{v.name}: median saturation {saturation.rps:.0f} rps; at {rate:.0f} rps p99 "
              f"{half.p(99):.1f} ms; at {args.common_rate:.0f} rps p99 {common.p(99):.1f} ms",
              flush=True)  # fmt: skip
        results.append(VariantResult(v.name, bursts[v.name], half, common))
    return results


def cycle(users: Sequence[int], n: int) -> list[int]:
    return [users[i % len(users)] for i in range(n)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.e2e",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=20_000, help="stream events for features")
    parser.add_argument(
        "--burst", type=int, default=1500, help="saturation burst, the same for every variant"
    )
    parser.add_argument("--seconds", type=float, default=10, help="length of the half-load run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating saturation rounds")
    parser.add_argument("--timeout", type=float, default=240, help="wait for answers (s)")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per request")
    parser.add_argument(
        "--common-rate", type=float, default=20, help="a rate every variant also runs at (rps)"
    )
    add_variant_flags(parser)
    return parser.parse_args(argv)


def add_variant_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--variants",
        default="worker,naive,ceiling",
        help="of worker, naive, ceiling, workers2 (two workers in one group) and trial",
    )
    parser.add_argument(
        "--trial-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a worker setting of the trial variant (the worker with these on top, measured "
        "beside it on the same stack and schedules); repeatable",
    )


def trial_env(pairs: Sequence[str]) -> dict[str, str]:
    """``--trial-env`` pairs as a mapping; a pair without ``=`` is refused."""
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--trial-env wants NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp_name:
        tmp = Path(tmp_name)
        results = run_all(args, tmp)
    report(results)
    return 0


def run_all(args: argparse.Namespace, tmp: Path) -> list[VariantResult]:
    with variants_up(args, tmp) as (kafka, world, running):
        return run_variants(running, kafka, world, args)


@contextmanager
def variants_up(
    args: argparse.Namespace, tmp: Path
) -> Iterator[tuple[KafkaSettings, World, list[Running]]]:
    """Kafka, Redis and Triton on free ports, the features written, ``args.variants`` started.

    Reads ``args.events``, ``args.candidates``, ``args.variants`` and ``args.trial_env``;
    stops everything on exit.
    """
    with pipeline_up(args, tmp) as (kafka, world, base):
        variants = {
            "worker": ("inference.worker", base, 1),
            "naive": ("tests.benchmarks.baselines.naive_worker", base, 1),
            "ceiling": ("inference.worker", {**base, "STREAMREC_WORKER_SCORER": "onnx"}, 1),
            # The deployment a two-core box would run: one worker per core, one group.
            "workers2": ("inference.worker", base, 2),
            "trial": ("inference.worker", {**base, **trial_env(args.trial_env)}, 1),
        }
        wanted = args.variants.split(",")
        unknown = set(wanted) - set(variants)
        if unknown:
            raise SystemExit(f"unknown variants {sorted(unknown)}; known: {sorted(variants)}")
        running: list[Running] = []
        try:
            for name, (module, env, replicas) in variants.items():
                if name in wanted:
                    started = start_variant(name, module, env, kafka, tmp, replicas)
                    started.triton_metrics = getattr(args, "triton_metrics", "")
                    running.append(started)
            yield kafka, world, running
        finally:
            for v in running:
                v.close()


@contextmanager
def pipeline_up(
    args: argparse.Namespace, tmp: Path
) -> Iterator[tuple[KafkaSettings, World, dict[str, str]]]:
    """Kafka, Redis and Triton on free ports, the features written; the workers' environment.

    Reads ``args.events`` and ``args.candidates``; stops everything on exit.
    """
    world = build_world(tmp / "model", stream_events(args.events))
    models = tmp / "models"
    repository.publish(world.model_dir, models)
    cache = Path(os.environ.get("STREAMREC_CACHE_DIR", REPO_ROOT / ".cache"))
    settings = StackSettings(
        home=tmp / "stack", cache_dir=cache,
        kafka_port=free_port(), kafka_controller_port=free_port(), redis_port=free_port(),
        triton_http_port=free_port(), triton_grpc_port=free_port(), triton_metrics_port=free_port(),
        triton_model_repository=models,
        # Capacity is a long-running broker's: the JVM's tiered JIT, not the local
        # stack's C1 default for runs of minutes (earlier figures were measured so).
        kafka_jit="tiered",
    )  # fmt: skip
    stack = Stack(settings)
    stack.up(["kafka", "redis", "triton"])
    try:
        kafka = KafkaSettings(settings.kafka_bootstrap)
        applied = applied_copy(tmp / "feast", settings.redis_url)
        written = write_features(applied.client, applied.project, changelog(world.events))
        print(f"{len(world.users)} users, {written} feature rows", flush=True)
        base = worker_env(
            kafka,
            settings.redis_url,
            applied.project,
            world.model_dir,
            WorkerTopics("per-variant", "per-variant"),
            (settings.triton_grpc_url, "ranker_python"),
            max_candidates=str(args.candidates),
            triton_timeout_ms="5000",
        )
        base["STREAMREC_WORKER_FEAST_REPO"] = str(applied.path)
        base["STREAMREC_STACK_HOME"] = str(tmp / "feast" / "stack")
        # Not the workers' setting: where bench-sla reads Triton's own durations.
        args.triton_metrics = f"http://127.0.0.1:{settings.triton_metrics_port}/metrics"
        yield kafka, world, base
    finally:
        stack.down(["kafka", "redis", "triton"])


def report(results: list[VariantResult]) -> None:
    by = {r.name: r for r in results}
    common = results[0].common.sent / max(1e-9, results[0].common.seconds) if results else 0
    # Over every request a variant was sent: bursts, half load, common rate.
    header = ["variant", "max rps", "half-load rps", "p50 ms", "p95 ms", "p99 ms",
              f"p50/p99 ms @{common:.0f} rps", "sent", "degraded", "unanswered",
              "errors"]  # fmt: skip
    rows = [
        [r.name, f"{r.saturation.rps:.0f}", f"{r.half.rps:.0f}", f"{r.half.p(50):.1f}",
         f"{r.half.p(95):.1f}", f"{r.half.p(99):.1f}",
         f"{r.common.p(50):.1f} / {r.common.p(99):.1f}", f"{r.total.sent:,}",
         f"{r.total.degraded:,}", f"{r.total.sent - r.total.answered:,}",
         f"{r.total.error_rate:.2%}"]
        for r in results
    ]  # fmt: skip
    print_table(header, rows)
    save_bar_plot(
        REPORT,
        "request → recommendation latency at half of each one's max rate (ms)",
        [r.name for r in results],
        {f"p{q}": [r.half.p(q) for r in results] for q in (50, 95, 99)},
    )
    print(f"plot: {REPORT}")
    worker, naive, ceiling = (by.get(n) for n in ("worker", "naive", "ceiling"))
    values: dict[str, float | str] = {}
    if worker:
        values["throughput_rps"] = worker.saturation.rps
        values["error_rate"] = f"{worker.total.error_rate:.4f}"
        values["degraded"] = worker.total.degraded
    if naive:
        values["naive_rps"] = naive.saturation.rps
    if ceiling:
        values["ceiling_rps"] = ceiling.saturation.rps
    if worker:
        values["p99_ms_at_half_load"] = worker.half.p(99)
    if worker and naive and naive.saturation.rps:
        print(f"worker / naive throughput: {worker.saturation.rps / naive.saturation.rps:.1f}x")
    if worker and ceiling and ceiling.saturation.rps:
        print(f"worker / ceiling throughput: {worker.saturation.rps / ceiling.saturation.rps:.0%}")
    print(result_line(**values))


if __name__ == "__main__":
    sys.exit(main())
