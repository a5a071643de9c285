"""The repository's `ranker_torch` served on a GPU by `tritonserver`, against the raw model.

Two commands:

- `pack` (here, no GPU needed): writes the wheel's server parts for one Python
  version (bin/, lib/, the python backend with that version's stub) to a tar.xz,
  for a GPU host that has no package index.
- `run` (on the GPU host; `tests/benchmarks/gpu_serving.sh` does the unpacking):
  builds the DIN's artifacts (the trained ones in STREAMREC_MODEL_DIR if they hold
  model.pt, model_config.json and network.py, else a random DIN of the reference
  size), times the raw model (eager bf16 and torch.compile, best taken) on
  device-resident inputs, publishes `ranker_torch` from
  inference/model_repository with `inference.serving.repository.publish` into a
  temporary repository, and for each instance count rewrites its config.pbtxt
  (instances, batching, compile and bucket parameters) and serves it. Served
  candidates/s (over the measured wall time, first request's start to last one's
  end) and p50/p99 (failed requests at +infinity) are measured for several users
  per request and client counts. Clients are separate processes speaking Triton's
  HTTP/REST protocol with the binary tensor extension (stdlib only: the host lacks
  tritonclient). Writes a JSON and a table, ends with a RESULT line: served/raw at
  saturation and at p99 <= 10 ms, FLOPs per candidate and the fraction of the
  GPU's bf16 dense peak.

Only the standard library, numpy and torch are needed on the GPU host, plus this repository.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inference.serving import repository
from tests.benchmarks import triton_config
from tests.benchmarks.gpu_model import (
    INPUT_NAMES,
    REPO_ROOT,
    flops_per_candidate,
    make_inputs,
    raw_reference,
    write_artifacts,
)
from tests.benchmarks.report import BenchmarkFailure, fail, failure_percentile

MODEL = "ranker_torch"


# ---------------------------------------------------------------- pack (local)


def pack(out: Path, python: str) -> Path:
    """tar.xz of the server parts with the python-backend stub for `python` (e.g. 3.12)."""
    sys.path.insert(0, str(REPO_ROOT))
    from jobs.localstack.settings import StackSettings
    from jobs.localstack.triton_server import ensure_server

    home = ensure_server(StackSettings.from_env().cache_dir, python)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:xz", preset=6) as archive:
        for part in ("bin", "lib", "caches", f"backends-py{python}"):
            archive.add(home / part, arcname=part.replace(f"backends-py{python}", "backends"))
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)")
    return out


# ---------------------------------------------------------------- the server


def configure(repo: Path, published_text: str, args: argparse.Namespace, instances: int) -> None:
    """The published config.pbtxt with this run's instances, batching and parameters."""
    kind = "KIND_GPU" if args.device == "cuda" else "KIND_CPU"
    preferred = [size for size in (64, 128, 256, 512) if size <= args.max_batch]
    fields = {
        "max_batch_size": f"max_batch_size: {args.max_batch}",
        "instance_group": f"instance_group [ {{ kind: {kind} count: {instances} }} ]",
        "dynamic_batching": f"dynamic_batching {{ preferred_batch_size: {preferred} "
        f"max_queue_delay_microseconds: {args.queue_delay_us} }}",
    }
    parameters = {
        "intra_op_threads": str(args.threads),
        "compile": args.compile,
        "compile_mode": args.compile_mode,
        # One candidate count per run: compile that bucket only (users: powers of two).
        "candidate_buckets": str(args.candidates),
        "user_buckets": "",
    }
    text = triton_config.override(published_text, fields, parameters)
    (repo / MODEL / "config.pbtxt").write_text(f"# gpu_serving run, {instances} instances\n{text}")


def start_server(server: Path, repo: Path, log: Path, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(server / "lib"), libdir, env.get("LD_LIBRARY_PATH", "")) if p
    )
    # The stub finds its Python environment (torch) through python3 on PATH.
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    argv = [
        str(server / "bin" / "tritonserver"),
        f"--model-repository={repo}",
        f"--backend-directory={server / 'backends'}",
        "--model-control-mode=explicit",
        f"--load-model={MODEL}",
        "--http-address=127.0.0.1",
        f"--http-port={port}",
        "--grpc-address=127.0.0.1",
        f"--grpc-port={port + 1}",
        "--metrics-address=127.0.0.1",
        f"--metrics-port={port + 2}",
        # Enough HTTP threads for every client connection at once.
        "--http-thread-count=32",
    ]
    handle = log.open("wb")
    process = subprocess.Popen(
        argv, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tritonserver exited ({process.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1):
                return process
        except OSError:
            time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    raise RuntimeError(f"tritonserver not ready after 300 s; see {log}")


# ---------------------------------------------------------------- HTTP client


_DATATYPE = {np.dtype(np.int32): "INT32", np.dtype(np.float32): "FP32"}


def encode_request(inputs: dict[str, np.ndarray[Any, Any]]) -> tuple[bytes, int]:
    """Triton's binary tensor extension: JSON header, then the raw input bytes."""
    header = {
        "inputs": [
            {
                "name": n,
                "shape": list(a.shape),
                "datatype": _DATATYPE[a.dtype],
                "parameters": {"binary_data_size": a.nbytes},
            }
            for n, a in inputs.items()
        ],
        "outputs": [{"name": "scores", "parameters": {"binary_data": True}}],
    }
    head = json.dumps(header).encode()
    return head + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs.values()), len(head)


def post(conn: http.client.HTTPConnection, body: bytes, head_len: int) -> np.ndarray[Any, Any]:
    conn.request(
        "POST",
        f"/v2/models/{MODEL}/infer",
        body,
        {
            "Inference-Header-Content-Length": str(head_len),
            "Content-Type": "application/octet-stream",
        },
    )
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:300]!r}")
    json_len = int(response.getheader("Inference-Header-Content-Length") or len(data))
    header = json.loads(data[:json_len])
    shape = header["outputs"][0]["shape"]
    return np.frombuffer(data[json_len:], dtype=np.float32).reshape(shape)


def client_loop(
    port: int,
    users: int,
    candidates: int,
    limits: tuple[int, int],
    seed: int,
    start_at: float,
    seconds: float,
) -> tuple[list[float], int, float, float]:
    """One client process: requests back to back from `start_at` for `seconds`.

    Returns the latencies (s), the errors, and the wall-clock times (`time.time()`,
    comparable across processes) when its first request started and its last ended.
    """
    body, head_len = encode_request(make_inputs(users, candidates, *limits, seed))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    post(conn, body, head_len)  # connect and warm up outside the window
    while time.time() < start_at:
        time.sleep(0.001)
    latencies, errors = [], 0
    began = time.time()
    end = start_at + seconds
    while time.time() < end:
        sent = time.perf_counter()
        try:
            post(conn, body, head_len)
        except (RuntimeError, OSError):
            errors += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        latencies.append(time.perf_counter() - sent)
    return latencies, errors, began, time.time()


def served(
    port: int, users: int, clients: int, args: argparse.Namespace, limits: tuple[int, int]
) -> dict[str, Any]:
    """One measurement: `clients` processes sending requests of `users` users."""
    start_at = time.time() + 3.0  # every process connected and warm by then
    jobs = [
        (port, users, args.candidates, limits, 1000 + i, start_at, args.seconds)
        for i in range(clients)
    ]
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        outcomes = pool.starmap(client_loop, jobs)
    return {"users_per_request": users, "clients": clients,
            **served_figures(outcomes, users * args.candidates)}  # fmt: skip


def served_figures(
    outcomes: Sequence[tuple[list[float], int, float, float]], cands_per_request: int
) -> dict[str, Any]:
    """Served figures of one measurement, from every client's outcome.

    The rate divides by the measured wall time, from the first request's start to
    the last one's end (later than the configured window: the last requests run
    past it), not by ``--seconds``; failed requests count at +infinity in p50/p99.
    """
    latencies = [x * 1000 for lats, *_ in outcomes for x in lats]
    errors = sum(e for _, e, _, _ in outcomes)
    elapsed = max(last for *_, last in outcomes) - min(first for *_, first, _ in outcomes)
    return {
        "requests": len(latencies),
        "errors": errors,
        "elapsed_s": elapsed,
        "cands_per_s": len(latencies) * cands_per_request / elapsed,
        "p50_ms": failure_percentile(latencies, errors, 50),
        "p99_ms": failure_percentile(latencies, errors, 99),
    }


def check_scores(port: int, model: Any, limits: tuple[int, int], candidates: int) -> float:
    """Largest |served - fp32 torch on CPU| over one request of 4 users."""
    import torch

    inputs = make_inputs(4, candidates, *limits, seed=99)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    scores = post(conn, *encode_request(inputs))
    with torch.inference_mode():
        expected = model(*(torch.from_numpy(inputs[n]) for n in INPUT_NAMES)).numpy()
    return float(np.abs(scores - expected).max())


# ---------------------------------------------------------------- run (GPU host)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # Artifacts and the repository stay out of $OUT (the reference model.pt is 1 GB).
    work = Path(tempfile.mkdtemp(prefix="gpu-serving-"))
    model, source = write_artifacts(work / "artifacts", args)
    config = model.config
    limits = (config.num_items, config.num_categories)
    users_list = [int(u) for u in args.users.split(",")]
    print(f"model: {source}; {args.candidates} candidates per user", flush=True)
    report: dict[str, Any] = {
        "model": source,
        "candidates_per_user": args.candidates,
        "queue_delay_us": args.queue_delay_us,
        "compile": args.compile,
        "compile_mode": args.compile_mode,
        "intra_op_threads": args.threads,
        "flops_per_candidate": flops_per_candidate(config, args.candidates),
        "peak_tflops": args.peak_tflops,
    }
    variants = ["eager", *(["compile"] if args.device == "cuda" else [])]
    variants += ["max-autotune"] if args.autotune else []
    report["raw_cands_per_s"] = raw_reference(
        model, sorted({*users_list, 64, 256}), args.candidates, args.raw_seconds,
        args.device, variants,
    )  # fmt: skip
    repo = work / "model_repository"
    repository.publish(work / "artifacts", repo, [MODEL])
    published_text = (repo / MODEL / "config.pbtxt").read_text()
    report["served"] = []
    diffs = []
    try:
        for instances in [int(n) for n in args.instances.split(",")]:
            configure(repo, published_text, args, instances)
            log = out / f"tritonserver-{instances}.log"
            server = start_server(Path(args.server), repo, log, args.port)
            try:
                diffs.append(check_scores(args.port, model, limits, args.candidates))
                for users in users_list:
                    for clients in [int(c) for c in args.clients.split(",")]:
                        row = {"instances": instances,
                               **served(args.port, users, clients, args, limits)}  # fmt: skip
                        report["served"].append(row)
                        print(json.dumps(row), flush=True)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)
        report["max_abs_diff_vs_fp32"] = max(diffs)
        tolerance = args.score_tolerance or (0.02 if args.device == "cuda" else 1e-5)
        if report["max_abs_diff_vs_fp32"] > tolerance:
            raise BenchmarkFailure(
                f"served scores differ from the fp32 model by {max(diffs):.4f} (> {tolerance})"
            )
        summarize(report, out)
    except BenchmarkFailure as failure:
        return fail(failure)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def ratios(report: dict[str, Any]) -> dict[str, Any]:
    """Served against raw, at saturation and at p99 <= 10 ms, and against the GPU's peak."""
    raw_best = max(
        ((rate, variant, users) for variant, rows in report["raw_cands_per_s"].items()
         for users, rate in rows.items()),
        key=lambda entry: entry[0],
    )  # fmt: skip
    peak = raw_best[0]
    flops, peak_flops = report["flops_per_candidate"], report["peak_tflops"] * 1e12
    best = max(report["served"], key=lambda r: r["cands_per_s"])
    fast = [r for r in report["served"] if r["p99_ms"] <= 10]
    best_fast = max(fast, key=lambda r: r["cands_per_s"]) if fast else None
    return {
        "raw_peak_cands_per_s": peak,
        "raw_best": f"{raw_best[1]}@{raw_best[2]}users",
        "saturation": best,
        "served_over_raw": best["cands_per_s"] / peak,
        "at_p99_le_10ms": best_fast,
        "served_over_raw_at_p99_le_10ms": best_fast["cands_per_s"] / peak if best_fast else None,
        "raw_tflops": peak * flops / 1e12,
        "raw_fraction_of_peak": peak * flops / peak_flops,
        "served_fraction_of_peak": best["cands_per_s"] * flops / peak_flops,
    }


def summarize(report: dict[str, Any], out: Path) -> None:
    figures = ratios(report)
    report.update(figures)
    peak = figures["raw_peak_cands_per_s"]
    lines = [
        f"raw peak {peak:,.0f} cands/s ({figures['raw_best']}, {report['model']}); "
        f"{report['flops_per_candidate'] / 1e6:.3f} MFLOP/candidate = "
        f"{figures['raw_tflops']:.1f} TFLOP/s, {figures['raw_fraction_of_peak']:.1%} of "
        f"{report['peak_tflops']:.0f}; max |served - fp32| = {report['max_abs_diff_vs_fp32']:.4f}",
        f"{'instances':>9} {'users/req':>9} {'clients':>7} {'cands/s':>12} {'of raw':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'errors':>6}",
    ]
    for row in report["served"]:
        lines.append(
            f"{row['instances']:>9} {row['users_per_request']:>9} {row['clients']:>7} "
            f"{row['cands_per_s']:>12,.0f} {row['cands_per_s'] / peak:>7.0%} "
            f"{row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} {row['errors']:>6}"
        )
    best, fast = figures["saturation"], figures["at_p99_le_10ms"]
    # No row within 10 ms is a result, not a zero rate.
    fast_rate = f"{fast['cands_per_s']:.0f}" if fast else "none"
    fast_ratio = f"{figures['served_over_raw_at_p99_le_10ms']:.3f}" if fast else "none"
    lines.append(
        f"RESULT raw_peak_cands_per_s={peak:.0f} raw_best={figures['raw_best']} "
        f"served_cands_per_s={best['cands_per_s']:.0f} "
        f"served_over_raw={figures['served_over_raw']:.3f} served_p99_ms={best['p99_ms']:.1f} "
        f"served_cands_per_s_at_p99_le_10ms={fast_rate} "
        f"served_over_raw_at_p99_le_10ms={fast_ratio} "
        f"mflop_per_cand={report['flops_per_candidate'] / 1e6:.3f} "
        f"raw_fraction_of_peak={figures['raw_fraction_of_peak']:.4f} "
        f"served_fraction_of_peak={figures['served_fraction_of_peak']:.4f} "
        f"max_abs_diff_vs_fp32={report['max_abs_diff_vs_fp32']:.4f}"
    )
    text = "\n".join(lines)
    print(text)
    (out / "gpu_serving.txt").write_text(text + "\n")
    (out / "gpu_serving.json").write_text(json.dumps(report, indent=2) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.gpu_serving",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="tar.xz of the server parts for a GPU host")
    p.add_argument("--python", default="3.12", help="the GPU host's Python X.Y")
    p.add_argument("--out", type=Path, default=Path(".cache/gpu/tritonserver.tar.xz"))
    r = commands.add_parser("run", help="raw vs served on this host's GPU")
    r.add_argument("--server", required=True, help="folder the tar.xz was unpacked into")
    r.add_argument("--out", default=os.environ.get("OUT", "gpu-serving-out"))
    r.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: a smoke test of the whole path on a machine without a GPU "
        "(fp32, CPU instances, eager raw reference)",
    )
    r.add_argument("--num-items", type=int, default=4_000_000)
    r.add_argument("--num-categories", type=int, default=10_000)
    r.add_argument("--dim", type=int, default=64)
    r.add_argument("--candidates", type=int, default=200)
    r.add_argument("--users", default="16,64", help="users per request")
    r.add_argument("--clients", default="8,16", help="client processes")
    r.add_argument("--instances", default="2,4", help="model instances, one server per count")
    r.add_argument("--max-batch", type=int, default=512, help="users per batched call")
    r.add_argument("--queue-delay-us", type=int, default=500)
    r.add_argument("--threads", type=int, default=1, help="intra-op CPU threads per instance")
    r.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                   help="ranker_torch's compile parameter (auto: on CUDA only)")  # fmt: skip
    r.add_argument("--compile-mode", default="default", help="ranker_torch's compile_mode")
    r.add_argument("--autotune", action="store_true",
                   help="also time raw max-autotune-no-cudagraphs (minutes)")  # fmt: skip
    r.add_argument("--peak-tflops", type=float, default=989.0,
                   help="the GPU's dense bf16 peak (H200 SXM: 989)")  # fmt: skip
    r.add_argument("--score-tolerance", type=float, default=0.0,
                   help="largest |served - fp32| (0: 0.02 bf16 on CUDA, 1e-5 CPU)")  # fmt: skip
    r.add_argument("--seconds", type=float, default=4.0, help="per served measurement")
    r.add_argument("--raw-seconds", type=float, default=2.0)
    r.add_argument("--port", type=int, default=18500)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "pack":
        pack(args.out, args.python)
        return 0
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
