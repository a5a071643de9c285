"""One Redis against a Redis Cluster, side by side in one run: the writer and the reads.

    make bench-redis-cluster [REDIS_CLUSTER_ARGS="--records 20000"]

Starts a Redis and a cluster (three masters, three replicas) of its own on free
ports, from the stack manager, and sends both the same work:

- **writes**: the real Taobao stream as the feature job emits it (per event, the
  user's fresh row of up to 50 clicks), through the writer's own conversion and
  :class:`~runtime.online.redis_store.OnlineStoreWriter`, with the co-visitation
  counts, in batches of ``--batch``. On the cluster each batch waits for a replica of
  every master it wrote to (``WAIT 1``), as the writer does by default.
- **reads**: the worker's first round trip (both user views of 128 users) through
  :class:`~inference.worker.features.FeatureReader`, ``--reads`` times.

Reported per store: rows/s, Redis CPU per row (``used_cpu_sys + used_cpu_user`` over
the write phase, summed over the masters and over the replicas) and read latency
percentiles. ``master_cpu_us_per_row`` is what ``make capacity`` sizes shards by.
On this 2-core box the cluster's six servers share the cores with the writer, so
its rows/s is a floor; its CPU per row is what the capacity model needs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from inference.worker.features import FeatureReader
from inference.worker.inventory import inventory_key
from jobs.feature_writer.covisit import CovisitOptions, batch_visits, count_calls
from jobs.feature_writer.rows import ConversionOptions, to_rows
from jobs.localstack import Stack
from runtime.online.connect import connect
from runtime.online.redis_store import OnlineStoreWriter
from schemas.codec import feature_update_codec
from schemas.features import FeatureUpdate
from tests.benchmarks.report import percentile, print_table, result_line, save_bar_plot
from tests.jobs.feature_writer.bench_writer import taobao_records
from tests.support.stacks import own_stack_settings

REPO_ROOT = Path(__file__).resolve().parents[2]
REPORT = REPO_ROOT / "reports" / "bench-redis-cluster.png"
PROJECT = "streamrec_bench"
READ_BATCH = 128


@dataclass(frozen=True)
class Measured:
    store: str
    rows_per_s: float
    master_us_per_row: float  # summed over the masters
    replica_us_per_row: float  # summed over the replicas
    read_ms: list[float]

    @property
    def cpu_us_per_row(self) -> float:
        return self.master_us_per_row + self.replica_us_per_row


def server_cpu_s(ports: Sequence[int]) -> dict[int, float]:
    """Seconds of CPU each server has used so far."""
    out = {}
    for port in ports:
        info: Any = redis.Redis(host="127.0.0.1", port=port).info("cpu")
        out[port] = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    return out


def is_replica(port: int) -> bool:
    info: Any = redis.Redis(host="127.0.0.1", port=port).info("replication")
    return bool(info["role"] == "slave")


def write_all(
    writer: OnlineStoreWriter,
    updates: list[FeatureUpdate],
    batch: int,
    progress: Callable[[int], None],
) -> int:
    options, covisit = ConversionOptions(), CovisitOptions(project=PROJECT)
    rows_written = 0
    for start in range(0, len(updates), batch):
        chunk = updates[start : start + batch]
        visits = batch_visits(((None, u) for u in chunk), covisit.window_ms)
        counts = count_calls(visits, covisit, cluster=writer.is_cluster)
        rows = to_rows(chunk, options)
        writer.write(rows, counts)
        rows_written += len(chunk)
        progress(rows_written)
    return rows_written


def measure(
    store: str,
    url: str,
    ports: Sequence[int],
    updates: list[FeatureUpdate],
    args: argparse.Namespace,
) -> Measured:
    client = connect(url, socket_timeout=10)
    writer = OnlineStoreWriter(client, PROJECT)

    def progress(done: int) -> None:
        if done % (10 * args.batch) == 0 or done == len(updates):
            print(f"  {store}: {done:,}/{len(updates):,} rows", flush=True)

    cpu_before, started = server_cpu_s(ports), time.perf_counter()
    written = write_all(writer, updates, args.batch, progress)
    elapsed = time.perf_counter() - started
    cpu_after = server_cpu_s(ports)
    spent = {port: cpu_after[port] - cpu_before[port] for port in ports}
    replicas = sum(spent[port] for port in ports if is_replica(port))
    masters = sum(spent.values()) - replicas
    users = sorted({u.user_id for u in updates if hasattr(u, "user_id")})
    reader = FeatureReader(client, PROJECT, inventory_key(PROJECT))
    read_ms = []
    for n in range(args.reads):
        at = (n * READ_BATCH) % max(1, len(users) - READ_BATCH)
        begun = time.perf_counter()
        reader.users(users[at : at + READ_BATCH])
        read_ms.append((time.perf_counter() - begun) * 1000)
    client.close()
    per_row = 1e6 / written
    return Measured(store, written / elapsed, masters * per_row, replicas * per_row, read_ms)


def report(one: Measured, cluster: Measured) -> None:
    header = ["store", "rows/s", "Redis CPU µs/row", "of which masters", "replicas",
              "read p50 ms", "read p99 ms"]  # fmt: skip
    rows = [
        [m.store, f"{m.rows_per_s:,.0f}", f"{m.cpu_us_per_row:.1f}",
         f"{m.master_us_per_row:.1f}", f"{m.replica_us_per_row:.1f}",
         f"{percentile(m.read_ms, 50):.2f}", f"{percentile(m.read_ms, 99):.2f}"]
        for m in (one, cluster)
    ]  # fmt: skip
    print_table(header, rows)
    save_bar_plot(
        REPORT,
        "one Redis vs a Redis Cluster (3 masters + 3 replicas), same writes and reads",
        ["rows/s (thousands)", "Redis CPU µs/row", "read p99 ms"],
        {
            m.store: [m.rows_per_s / 1000, m.cpu_us_per_row, percentile(m.read_ms, 99)]
            for m in (one, cluster)
        },
    )
    print(f"plot: {REPORT}")
    print(
        result_line(
            rows_per_s_one=one.rows_per_s,
            rows_per_s_cluster=cluster.rows_per_s,
            cluster_vs_one=f"{cluster.rows_per_s / one.rows_per_s:.2f}",
            redis_cpu_us_per_row_one=f"{one.cpu_us_per_row:.1f}",
            redis_cpu_us_per_row_cluster=f"{cluster.cpu_us_per_row:.1f}",
            master_cpu_us_per_row=f"{cluster.master_us_per_row:.1f}",
            replica_cpu_us_per_row=f"{cluster.replica_us_per_row:.1f}",
            read_p99_ms_one=f"{percentile(one.read_ms, 99):.2f}",
            read_p99_ms_cluster=f"{percentile(cluster.read_ms, 99):.2f}",
        )
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="make bench-redis-cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--records", type=int, default=30_000, help="Taobao events (rows)")
    parser.add_argument("--batch", type=int, default=2000, help="rows per write, as the writer")
    parser.add_argument("--reads", type=int, default=500, help="128-user reads per store")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    codec = feature_update_codec()
    updates = [codec.decode(raw) for raw in taobao_records(args.records)]
    print(f"{len(updates):,} fresh rows from the Taobao stream", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        one_settings = own_stack_settings(Path(tmp) / "one")
        cluster_settings = own_stack_settings(Path(tmp) / "cluster", redis_cluster=True)
        stacks = [Stack(one_settings), Stack(cluster_settings)]
        try:
            for stack in stacks:
                stack.up(["redis"])
            one = measure("one Redis", one_settings.redis_url,
                          one_settings.redis_node_ports(), updates, args)  # fmt: skip
            cluster = measure("cluster", cluster_settings.redis_url,
                              cluster_settings.redis_node_ports(), updates, args)  # fmt: skip
        finally:
            for stack in stacks:
                stack.down(["redis"])
    report(one, cluster)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
