"""`make bench-serving`: the ranker served by tritonserver (gRPC) against ONNX Runtime in process.

The same ONNX file both ways: the trained model in STREAMREC_MODEL_DIR (default
.cache/ranker) if it has been trained, else an untrained DIN of realistic size
(22,000 items, 1,500 categories, dim 32). Two request shapes: one user with one
candidate (the latency floor) and one user with 200 candidates (the worker's
shape). Served: several client threads, each with its own gRPC connection,
sending requests back to back to the python-backend model (dynamic batching on),
on the local stack's binary started on free ports. In process: one caller
looping `InferenceSession.run` on the same inputs (ONNX Runtime uses every core).
Rounds alternate served and in-process; medians are reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

from inference.serving import repository
from inference.serving.probe import probe_inputs
from jobs.localstack import Stack, StackSettings
from tests.benchmarks.report import print_table, save_bar_plot
from tests.conftest import free_port
from tests.inference.serving.artifacts import write_serving_artifacts
from tests.inference.serving.client import infer

MODEL = "ranker_python"
PLOT = Path("reports/bench-serving.png")
Inputs = dict[str, np.ndarray[Any, Any]]


@dataclass(frozen=True)
class Measured:
    candidates_per_s: float
    p50_ms: float
    p99_ms: float


def model_dir(scratch: Path) -> tuple[Path, str]:
    """The trained artifacts if present, else a random model of realistic size."""
    trained = Path(os.environ.get("STREAMREC_MODEL_DIR", ".cache/ranker"))
    if (trained / "manifest.json").exists():
        return trained, f"trained model in {trained}"
    folder = write_serving_artifacts(scratch / "random", num_items=22_000, num_categories=1_500)
    return folder, "untrained DIN, 22,000 items, 1,500 categories, dim 32"


@contextmanager
def served(artifacts: Path, scratch: Path) -> Iterator[StackSettings]:
    """tritonserver on free ports serving `artifacts` as version 1."""
    repository.publish(artifacts, scratch / "models", [MODEL])
    ports = {free_port(), free_port(), free_port()}
    while len(ports) < 3:
        ports.add(free_port())
    http, grpc, metrics = sorted(ports)
    settings = StackSettings(
        home=scratch / "home",
        cache_dir=StackSettings.from_env().cache_dir,
        triton_http_port=http,
        triton_grpc_port=grpc,
        triton_metrics_port=metrics,
        triton_model_repository=scratch / "models",
        triton_models=(MODEL,),
    )
    stack = Stack(settings)
    stack.up(["triton"])
    try:
        yield settings
    finally:
        stack.down(["triton"])


def summarize(latencies_s: Sequence[float], candidates: int, elapsed_s: float) -> Measured:
    ms = np.asarray(latencies_s) * 1000
    return Measured(
        candidates_per_s=len(latencies_s) * candidates / elapsed_s,
        p50_ms=float(np.percentile(ms, 50)),
        p99_ms=float(np.percentile(ms, 99)),
    )


def run_clients(
    clients: int, duration_s: float, make_call: Callable[[], Callable[[], None]]
) -> tuple[list[float], float]:
    """`clients` threads calling back to back for `duration_s`; (latencies, elapsed)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    start_gate = threading.Barrier(clients + 1)
    deadline = [0.0]

    def loop(out: list[float]) -> None:
        call = make_call()
        call()  # warm the connection outside the measured window
        start_gate.wait()
        while (now := time.perf_counter()) < deadline[0]:
            call()
            out.append(time.perf_counter() - now)

    threads = [threading.Thread(target=loop, args=(out,)) for out in latencies]
    for thread in threads:
        thread.start()
    deadline[0] = time.perf_counter() + duration_s + 0.05
    start_gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return [x for out in latencies for x in out], time.perf_counter() - started


def measure_served(grpc_url: str, inputs: Inputs, clients: int, duration_s: float) -> Measured:
    def make_call() -> Callable[[], None]:
        client = grpcclient.InferenceServerClient(grpc_url)

        def call() -> None:
            infer(client, MODEL, inputs)

        return call

    latencies, elapsed = run_clients(clients, duration_s, make_call)
    return summarize(latencies, inputs["cand_items"].size, elapsed)


def measure_in_process(session: Any, inputs: Inputs, duration_s: float) -> Measured:
    def make_call() -> Callable[[], None]:
        def call() -> None:
            session.run(["scores"], inputs)

        return call

    latencies, elapsed = run_clients(1, duration_s, make_call)
    return summarize(latencies, inputs["cand_items"].size, elapsed)


def median(results: Sequence[Measured]) -> Measured:
    return Measured(
        statistics.median(r.candidates_per_s for r in results),
        statistics.median(r.p50_ms for r in results),
        statistics.median(r.p99_ms for r in results),
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.serving", description=__doc__)
    parser.add_argument("--candidates", default="1,200", help="candidates per request")
    parser.add_argument("--clients", type=int, default=4, help="concurrent gRPC clients")
    parser.add_argument("--seconds", type=float, default=6.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (median)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    counts = [int(c) for c in args.candidates.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as scratch_name:
        scratch = Path(scratch_name)
        artifacts, what = model_dir(scratch)
        num_items, num_categories = repository.read_limits(artifacts)
        session = ort.InferenceSession(
            str(repository.served_file(artifacts)), providers=["CPUExecutionProvider"]
        )
        print(
            f"model: {what}; {args.clients} gRPC clients, {args.rounds} rounds of "
            f"{args.seconds:.0f} s per measurement"
        )
        results: dict[int, dict[str, list[Measured]]] = {}
        with served(artifacts, scratch) as settings:
            for _ in range(args.rounds):
                for count in counts:
                    inputs = probe_inputs(num_items, num_categories, users=1, candidates=count)
                    row = results.setdefault(count, {"served": [], "in-process": [], "batched": []})
                    row["served"].append(
                        measure_served(settings.triton_grpc_url, inputs, args.clients, args.seconds)
                    )
                    row["in-process"].append(measure_in_process(session, inputs, args.seconds))
                    # The ceiling: one call scoring as many users as there are clients,
                    # what dynamic batching can at best turn the served requests into.
                    users = probe_inputs(num_items, num_categories, args.clients, count)
                    row["batched"].append(measure_in_process(session, users, args.seconds))
    report({count: {k: median(v) for k, v in row.items()} for count, row in results.items()})
    return 0


def report(results: dict[int, dict[str, Measured]]) -> None:
    header = [
        "cands/request",
        "served cands/s",
        "p50 ms",
        "p99 ms",
        "in-process cands/s",
        "p50 ms",
        "p99 ms",
        "served/in-process",
        "batched cands/s",
        "served/batched",
    ]
    rows = []
    for count, row in results.items():
        s, i, b = row["served"], row["in-process"], row["batched"]
        rows.append(
            [
                str(count),
                f"{s.candidates_per_s:,.0f}",
                f"{s.p50_ms:.2f}",
                f"{s.p99_ms:.2f}",
                f"{i.candidates_per_s:,.0f}",
                f"{i.p50_ms:.2f}",
                f"{i.p99_ms:.2f}",
                f"{s.candidates_per_s / i.candidates_per_s:.2f}",
                f"{b.candidates_per_s:,.0f}",
                f"{s.candidates_per_s / b.candidates_per_s:.2f}",
            ]
        )
    print_table(header, rows)
    save_bar_plot(
        PLOT,
        "ranker: candidates/s, Triton gRPC vs ONNX Runtime in process",
        [f"{count} cand/request" for count in results],
        {
            "served (Triton)": [row["served"].candidates_per_s for row in results.values()],
            "in process (ORT)": [row["in-process"].candidates_per_s for row in results.values()],
            "in process, users batched": [
                row["batched"].candidates_per_s for row in results.values()
            ],
        },
    )
    print(f"plot: {PLOT}")
    many = results[max(results)]
    print(
        f"RESULT served_cands_per_s={many['served'].candidates_per_s:.0f} "
        f"inproc_cands_per_s={many['in-process'].candidates_per_s:.0f} "
        f"served_p99_ms={many['served'].p99_ms:.2f}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
