"""`make capacity`: machines needed for 1k, 10k and 100k requests/s, from the benchmarks' figures.

Every input is a measured RESULT line (``capacity_inputs.txt``, one per source) or
a stated assumption with a flag of its own. The load: ``--events-per-krps``
(50,000) behaviour events/s for every 1,000 recommendation requests/s. Per stage:

- **Kafka brokers**: every record written once per replica (replication 3); a broker
  of ``--broker-cores`` cores takes, per core, what one broker took in
  ``bench-ingest`` per core of its box (raw produce rate, clients on the same box,
  so a floor; brokers scale with cores through their network and I/O threads);
  at least three.
- **Flink TaskManager slots**: events/s over ``bench-features``' events/s on one slot.
- **Feature writers and Redis shards**: changelog rows (events x rows per event) over
  the writer's drain rate; Redis CPU is the measured µs per written row (the masters'
  of ``bench-redis-cluster`` when given: a sharded store writes through scripts per
  node and waits for replicas; else one Redis's) plus ``--redis-read-us`` per request
  (an assumption: reads were not measured apart), filled to ``--redis-fill`` of a
  core per shard (one master; a replica each, counted as a core of its own although
  it used half the master's CPU).
- **Workers**: the worker's SLA rate per core from ``bench-sla`` (a 2-core box that
  also ran Triton on CPU, Kafka and Redis, so this is a floor).
- **Ranking**: candidates/s per CPU core (``bench-serving``, Triton on CPU) or per GPU
  (the H200 run), at ``candidates_per_request``; filled to ``--fill``.

Cost per million recommendations = the hourly cost of all the cores (and GPUs)
over the recommendations made in an hour, at ``--core-hour`` and ``--gpu-hour``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.report import BenchmarkFailure, fail, print_table, result_line

INPUTS = Path(__file__).with_name("capacity_inputs.txt")
Figures = Mapping[str, Mapping[str, float]]


def redis_us_per_row(figures: Figures) -> float:
    """Masters' CPU per written row: the cluster's if measured, else one Redis's (pure)."""
    cluster = figures.get("redis_cluster", {})
    if "master_cpu_us_per_row" in cluster:
        return cluster["master_cpu_us_per_row"]
    return figures["writer"]["redis_cpu_us_per_record"]


def parse_inputs(lines: Iterable[str]) -> dict[str, dict[str, float]]:
    """``source: RESULT key=value ...`` lines to {source: {key: value}} (pure)."""
    out: dict[str, dict[str, float]] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        source, _, rest = line.partition(":")
        words = rest.split()
        if not words or words[0] != "RESULT":
            raise BenchmarkFailure(f"not a '<source>: RESULT k=v ...' line: {line!r}")
        values = {}
        for word in words[1:]:
            key, _, value = word.partition("=")
            try:
                values[key] = float(value.rstrip("x"))
            except ValueError:
                continue  # a label (an index name), not a figure
        out[source.strip()] = values
    return out


@dataclass(frozen=True)
class Assumptions:
    events_per_krps: float = 50_000
    replication: int = 3
    broker_cores: int = 8
    redis_read_us: float = 100.0
    redis_fill: float = 0.6
    fill: float = 0.7  # headroom everywhere else: 70% of a measured rate is planned
    core_hour: float = 0.04
    gpu_hour: float = 4.0


@dataclass(frozen=True)
class Plan:
    rps: float
    brokers: int
    slots: int
    writers: int
    redis_shards: int
    workers_cores: int
    ranking_cores: int
    gpus: int
    cores_cpu_ranking: int
    cores_gpu_ranking: int
    cost_cpu_per_million: float
    cost_gpu_per_million: float


def need(load: float, per_unit: float, fill: float) -> int:
    """Units for ``load`` when each does ``per_unit`` and is planned at ``fill`` of it."""
    if per_unit <= 0:
        raise BenchmarkFailure("a per-unit rate of 0 cannot carry any load")
    return max(1, math.ceil(load / (per_unit * fill)))


def plan(rps: float, figures: Figures, a: Assumptions) -> Plan:
    """The machines for ``rps`` requests/s (pure)."""
    try:
        events = rps / 1000 * a.events_per_krps
        rows = events * figures["features"]["changelog_rows_per_event"]
        cands = rps * figures["sla"]["candidates_per_request"]
        # Records into Kafka: events, changelog rows, requests and answers.
        records = events + rows + 2 * rps
        per_core = figures["ingest"]["raw_produce_eps"] / figures["ingest"]["box_cores"]
        broker_rate = per_core * a.broker_cores
        brokers = max(a.replication, need(records * a.replication, broker_rate, a.fill))
        slots = need(events, figures["features"]["events_per_s"], a.fill)
        writers = need(rows, figures["writer"]["records_per_s"], a.fill)
        redis_core_s = rows * redis_us_per_row(figures) + rps * a.redis_read_us
        redis_shards = need(redis_core_s / 1e6, 1.0, a.redis_fill)
        worker_rate_per_core = figures["sla"]["sla_rps"] / figures["sla"]["box_cores"]
        worker_cores = need(rps, worker_rate_per_core, a.fill)
        cpu_cands_per_core = (
            figures["serving"]["served_cands_per_s"] / figures["serving"]["box_cores"]
        )
        ranking_cores = need(cands, cpu_cands_per_core, a.fill)
        gpus = need(cands, figures["gpu"]["served_cands_per_s"], a.fill)
    except KeyError as missing:
        raise BenchmarkFailure(f"the inputs lack the figure {missing}") from None
    # Cores of every stage but ranking: brokers, slots (one core each), writers (half a
    # core: the other half of the measured pair is Redis), Redis shards x2 (a replica
    # each), the workers.
    shared = brokers * a.broker_cores + slots + math.ceil(writers / 2) + 2 * redis_shards
    shared += worker_cores
    cpu_total, gpu_total = shared + ranking_cores, shared
    per_hour = rps * 3600 / 1e6  # millions of recommendations an hour
    return Plan(
        rps, brokers, slots, writers, redis_shards, worker_cores, ranking_cores, gpus,
        cpu_total, gpu_total,
        cpu_total * a.core_hour / per_hour,
        (gpu_total * a.core_hour + gpus * a.gpu_hour) / per_hour,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=Path, default=INPUTS, help="'<source>: RESULT ...' lines")
    parser.add_argument("--rates", default="1000,10000,100000", help="requests/s to plan for")
    defaults = Assumptions()
    for name in Assumptions.__dataclass_fields__:
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=float, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    try:
        figures = parse_inputs(args.inputs.read_text().splitlines())
        a = Assumptions(**{
            name: type(getattr(defaults, name))(getattr(args, name))
            for name in Assumptions.__dataclass_fields__
        })  # fmt: skip
        plans = [plan(float(rate), figures, a) for rate in args.rates.split(",")]
    except (BenchmarkFailure, OSError) as error:
        return fail(BenchmarkFailure(str(error)))
    print_table(
        ["requests/s", "brokers", "TM slots", "writers", "Redis shards", "worker cores",
         "CPU ranking cores", "H200s", "cores (CPU)", "cores (GPU)", "$/M recs CPU",
         "$/M recs GPU"],
        [
            [f"{p.rps:,.0f}", str(p.brokers), str(p.slots), str(p.writers), str(p.redis_shards),
             str(p.workers_cores), str(p.ranking_cores), str(p.gpus), str(p.cores_cpu_ranking),
             str(p.cores_gpu_ranking), f"{p.cost_cpu_per_million:.3f}",
             f"{p.cost_gpu_per_million:.3f}"]
            for p in plans
        ],
    )  # fmt: skip
    print(f"prices: {a.core_hour} $/core-hour, {a.gpu_hour} $/GPU-hour; planned at "
          f"{a.fill:.0%} of measured rates, Redis at {a.redis_fill:.0%} of a core")  # fmt: skip
    top = plans[-1]
    print(
        result_line(
            rps=top.rps,
            brokers=top.brokers,
            slots=top.slots,
            redis_shards=top.redis_shards,
            worker_cores=top.workers_cores,
            gpus=top.gpus,
            cpu_cost_per_million=f"{top.cost_cpu_per_million:.3f}",
            gpu_cost_per_million=f"{top.cost_gpu_per_million:.3f}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
