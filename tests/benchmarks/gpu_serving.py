"""The ranker served on a GPU by the same `tritonserver` binary, against the raw model.

Two commands:

- `pack` (here, no GPU needed): writes the wheel's server parts for one Python
  version (bin/, lib/, the python backend with that version's stub) to a tar.xz,
  for a GPU host that has no package index.
- `run` (on the GPU host; `tests/benchmarks/gpu_serving.sh` does the unpacking):
  builds a DIN (the trained one in STREAMREC_MODEL_DIR if present, else a random
  one of the reference size), measures the raw torch bf16 model's peak
  candidates/s on the GPU, then serves it through tritonserver's python backend
  (torch bf16 on CUDA, DLPack in and out, several instances, dynamic batching)
  and measures served candidates/s (over the measured wall time, first request's
  start to last one's end) and p50/p99 (failed requests at +infinity) for several
  users per request and client counts. Clients are separate processes speaking Triton's HTTP/REST
  protocol with the binary tensor extension (stdlib only: the host may lack
  tritonclient). Writes a JSON and a table, ends with a RESULT line.

Only stdlib, numpy and torch are needed on the GPU host, plus this repository.
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
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.benchmarks.report import failure_percentile

REPO_ROOT = Path(__file__).resolve().parents[2]
BACKEND_SOURCE = Path(__file__).resolve().parent / "gpu_serving_backend.py"
SEQ_LEN = 50
MODEL = "din_gpu"
INPUT_NAMES = ("seq_items", "seq_cats", "user_dense", "cand_items", "cand_cats", "cand_dense")


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


# ---------------------------------------------------------------- the model


def build_model(args: argparse.Namespace, version_dir: Path) -> Any:
    """The DIN (trained if STREAMREC_MODEL_DIR has one), saved into `version_dir`."""
    import torch

    sys.path.insert(0, str(REPO_ROOT))
    from jobs.ranker.model import DIN, DINConfig

    trained = Path(os.environ.get("STREAMREC_MODEL_DIR", REPO_ROOT / ".cache/ranker"))
    if (trained / "model.pt").exists() and (trained / "model_config.json").exists():
        config = DINConfig.load(trained / "model_config.json")
        model = DIN(config)
        model.load_state_dict(torch.load(trained / "model.pt", map_location="cpu"))
        source = f"trained model in {trained}"
    else:
        torch.manual_seed(0)
        config = DINConfig(
            num_items=args.num_items, num_categories=args.num_categories, dim=args.dim
        )
        model = DIN(config)
        source = f"random DIN, {args.num_items:,} items, dim {args.dim}"
    version_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), version_dir / "model.pt")
    config.save(version_dir / "model_config.json")
    return model.eval(), source


def make_inputs(
    users: int, candidates: int, num_items: int, num_categories: int, seed: int
) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    seq = rng.integers(2, num_items, (users, SEQ_LEN), dtype=np.int32)
    seq[:, : SEQ_LEN // 4] = 0
    return {
        "seq_items": seq,
        "seq_cats": rng.integers(2, num_categories, (users, SEQ_LEN), dtype=np.int32),
        "user_dense": rng.random((users, 4), dtype=np.float32),
        "cand_items": rng.integers(2, num_items, (users, candidates), dtype=np.int32),
        "cand_cats": rng.integers(2, num_categories, (users, candidates), dtype=np.int32),
        "cand_dense": rng.random((users, candidates, 5), dtype=np.float32),
    }


def raw_peak(
    model: Any, users_list: Sequence[int], candidates: int, seconds: float
) -> dict[str, Any]:
    """Candidates/s of the bf16 model on the GPU, inputs already there (no serving path)."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    gpu_model = model.to(device, dtype)
    config = model.config
    results = {}
    for users in users_list:
        host = make_inputs(users, candidates, config.num_items, config.num_categories, users)
        batch = [torch.from_numpy(host[n]).to(device) for n in INPUT_NAMES]
        batch[2], batch[5] = batch[2].to(dtype), batch[5].to(dtype)
        with torch.inference_mode():
            for _ in range(5):
                gpu_model(*batch)
            _sync(torch)
            calls, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                for _ in range(10):
                    gpu_model(*batch)
                _sync(torch)
                calls += 10
            elapsed = time.perf_counter() - started
        results[str(users)] = calls * users * candidates / elapsed
        print(
            f"raw torch {dtype}: {users} users x {candidates} cands: "
            f"{results[str(users)]:,.0f} cands/s",
            flush=True,
        )
    model.to("cpu", torch.float32)
    return results


def _sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


# ---------------------------------------------------------------- the server


def write_repository(repo: Path, args: argparse.Namespace) -> None:
    kind = "KIND_GPU" if args.device == "cuda" else "KIND_CPU"
    dims = {
        "seq_items": ("INT32", "50"),
        "seq_cats": ("INT32", "50"),
        "user_dense": ("FP32", "4"),
        "cand_items": ("INT32", "-1"),
        "cand_cats": ("INT32", "-1"),
        "cand_dense": ("FP32", "-1, 5"),
    }
    inputs = ",\n".join(
        f'  {{ name: "{n}" data_type: TYPE_{t} dims: [ {d} ] }}' for n, (t, d) in dims.items()
    )
    (repo / MODEL / "config.pbtxt").write_text(f"""name: "{MODEL}"
backend: "python"
max_batch_size: {args.max_batch}
input [
{inputs}
]
output [ {{ name: "scores" data_type: TYPE_FP32 dims: [ -1 ] }} ]
dynamic_batching {{
  preferred_batch_size: [ 64, 128, 256 ]
  max_queue_delay_microseconds: {args.queue_delay_us}
}}
instance_group [ {{ kind: {kind} count: {args.instances} }} ]
parameters: {{ key: "repo_root" value: {{ string_value: "{REPO_ROOT}" }} }}
""")
    shutil.copyfile(BACKEND_SOURCE, repo / MODEL / "1" / "model.py")


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
    repo = out / "model_repository"
    model, source = build_model(args, repo / MODEL / "1")
    config = model.config
    limits = (config.num_items, config.num_categories)
    users_list = [int(u) for u in args.users.split(",")]
    clients_list = [int(c) for c in args.clients.split(",")]
    print(f"model: {source}; {args.candidates} candidates per user", flush=True)
    report: dict[str, Any] = {
        "model": source,
        "candidates_per_user": args.candidates,
        "instances": args.instances,
        "queue_delay_us": args.queue_delay_us,
    }
    report["raw_cands_per_s"] = raw_peak(
        model, sorted({*users_list, 64, 256}), args.candidates, args.raw_seconds
    )
    write_repository(repo, args)
    server = start_server(Path(args.server), repo, out / "tritonserver.log", args.port)
    try:
        report["max_abs_diff_vs_fp32"] = check_scores(args.port, model, limits, args.candidates)
        report["served"] = []
        for users in users_list:
            for clients in clients_list:
                row = served(args.port, users, clients, args, limits)
                report["served"].append(row)
                print(json.dumps(row), flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    summarize(report, out)
    return 0


def summarize(report: dict[str, Any], out: Path) -> None:
    peak = max(report["raw_cands_per_s"].values())
    lines = [
        f"raw peak {peak:,.0f} cands/s ({report['model']}); "
        f"max |served - fp32| = {report['max_abs_diff_vs_fp32']:.4f}",
        f"{'users/req':>9} {'clients':>7} {'cands/s':>12} {'of raw':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'errors':>6}",
    ]
    for row in report["served"]:
        lines.append(
            f"{row['users_per_request']:>9} {row['clients']:>7} "
            f"{row['cands_per_s']:>12,.0f} {row['cands_per_s'] / peak:>7.0%} "
            f"{row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} {row['errors']:>6}"
        )
    best = max(report["served"], key=lambda r: r["cands_per_s"])
    fast = [r for r in report["served"] if r["p99_ms"] <= 10]
    best_fast = max(fast, key=lambda r: r["cands_per_s"]) if fast else None
    report["raw_peak_cands_per_s"] = peak
    report["best"] = best
    lines.append(
        f"RESULT raw_peak_cands_per_s={peak:.0f} served_cands_per_s={best['cands_per_s']:.0f} "
        f"served_fraction={best['cands_per_s'] / peak:.3f} served_p99_ms={best['p99_ms']:.1f} "
        f"best_cands_per_s_at_p99_le_10ms={best_fast['cands_per_s'] if best_fast else 0:.0f}"
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
        help="cpu: a smoke test of the whole path on a machine without a GPU",
    )
    r.add_argument("--num-items", type=int, default=4_000_000)
    r.add_argument("--num-categories", type=int, default=10_000)
    r.add_argument("--dim", type=int, default=64)
    r.add_argument("--candidates", type=int, default=200)
    r.add_argument("--users", default="1,16,64", help="users per request")
    r.add_argument("--clients", default="4,8,16", help="client processes")
    r.add_argument("--instances", type=int, default=4, help="model instances on the GPU")
    r.add_argument("--max-batch", type=int, default=512, help="users per batched call")
    r.add_argument("--queue-delay-us", type=int, default=500)
    r.add_argument("--seconds", type=float, default=6.0, help="per served measurement")
    r.add_argument("--raw-seconds", type=float, default=3.0)
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
