"""What a pause before a call costs: one ONNX Runtime call of the ranker, back to back
and after idle gaps, in one process (the box, not the pipeline, under test).

The request path is a chain of small calls separated by waits (a request polled, a
Redis round trip, the Triton hop). Measured on its own, the ranker scores one user's
100 candidates in under half a millisecond; inside Triton's stub, called every few
milliseconds, the same call took two to three times that. This benchmark runs the
served file through the worker's in-process scorer (one thread) on the same inputs,
with nothing but a sleep between calls, so that the gap alone is what differs: on a
virtual machine whose idle vCPU halts at once (the guest's ``haltpoll`` with no
polling), a call after a gap finds a core whose caches and predictors other work
has used. ``--pauses`` are the gaps, in milliseconds; rounds alternate the gaps so
that a change of the box's load hits them all alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inference.worker.scoring import OnnxScorer
from tests.benchmarks.gpu_model import make_inputs
from tests.benchmarks.report import print_table, result_line, save_bar_plot

DEFAULT_MODEL_DIR = Path(".cache/ranker")
PLOT = Path("reports/bench-cold-calls.png")


def timed_calls(run: Any, feed: dict[str, Any], pause_s: float, calls: int) -> list[float]:
    """Milliseconds of each of ``calls`` runs, each after sleeping ``pause_s``."""
    out = []
    for _ in range(calls):
        if pause_s:
            time.sleep(pause_s)
        start = time.perf_counter()
        run(feed)
        out.append((time.perf_counter() - start) * 1000)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.cold_calls", description=__doc__
    )
    parser.add_argument(
        "--model-dir", type=Path, default=DEFAULT_MODEL_DIR, help="the trained ranker (make train)"
    )
    parser.add_argument("--pauses", default="0,0.5,4", help="gaps before each call, ms")
    parser.add_argument("--users", default="1,4", help="users per call (100 candidates each)")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per cell and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    limits = json.loads((args.model_dir / "model_config.json").read_text())
    # The worker's in-process scorer: the served file, no spinning pool threads.
    run = OnnxScorer(args.model_dir, threads=1).run  # one thread, as the served model

    pauses = [float(p) for p in args.pauses.split(",")]
    users = [int(u) for u in args.users.split(",")]
    feeds = {
        u: make_inputs(u, 100, limits["num_items"], limits["num_categories"], 0) for u in users
    }
    medians: dict[tuple[int, float], list[float]] = {}
    for round_ in range(args.rounds):
        for u in users:
            timed_calls(run, feeds[u], 0, 30)  # warm the session for this shape
            for pause in pauses if round_ % 2 == 0 else reversed(pauses):
                calls = timed_calls(run, feeds[u], pause / 1000, args.calls)
                medians.setdefault((u, pause), []).append(statistics.median(calls))
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    cell = {key: statistics.median(values) for key, values in medians.items()}
    rows = [
        [
            str(u),
            f"{pause:g}",
            f"{cell[(u, pause)]:.3f}",
            f"{cell[(u, pause)] / cell[(u, pauses[0])]:.2f}",
        ]
        for u in users
        for pause in pauses
    ]
    print_table(["users", "pause ms", "median call ms", f"x pause {pauses[0]:g}"], rows)
    save_bar_plot(
        PLOT,
        "One ONNX Runtime call after a pause (median ms)",
        [f"{u} user(s)" for u in users],
        {f"pause {p:g} ms": [cell[(u, p)] for u in users] for p in pauses},
    )
    print(f"plot: {PLOT}")
    ratio = cell[(users[0], pauses[-1])] / cell[(users[0], pauses[0])]
    print(
        result_line(
            call_us_back_to_back=cell[(users[0], pauses[0])] * 1000,
            call_us_after_pause=cell[(users[0], pauses[-1])] * 1000,
            slowdown_x100=ratio * 100,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
