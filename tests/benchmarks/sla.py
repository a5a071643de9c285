"""``make bench-sla``: the highest rate each worker answers within the SLA (MLPerf server style).

The setup is ``make bench-e2e``'s (its own Kafka, Redis and Triton, real Taobao
features, the same model and candidates) and so are the variants: the worker
(Triton), the naive worker, and the ceiling (the worker scoring in process with
ONNX Runtime). Each first gets ``make bench-e2e``'s closed-loop bursts (burst
throughput, median of alternating rounds). Then, per variant:

- open-loop Poisson arrivals at a held rate: seeded exponential gaps, every request
  sent on schedule whether or not earlier ones were answered, for ``--seconds``
  (longer to reach ``--min-requests``, at most ``--max-seconds``) after ``--warmup``
  seconds at the same rate that are not judged (the variant sat idle while the
  others were measured); latency runs from each request's *scheduled* time to its
  answer's arrival at a real consumer, so a sender running late counts against the
  figure (no coordinated omission);
- a rate passes when p99 <= ``--sla-ms`` (every failure at +infinity) and the error
  rate (unanswered within ``--answer-timeout`` after the last send, or degraded) is
  under ``--max-error-rate``; a rate already certain to fail stops early;
- the search: ``--start-rate`` times ``--factor`` per rung until a rung fails, then
  ``--bisect-steps`` bisections between the best pass and the lowest failure; a
  failing hold is held again ``--rehold`` times (1) and fails the rate only if every
  hold fails. The variants' searches advance in alternation, one held rate each in
  turn, and every variant gets the same schedule at the same rate.

At each variant's SLA rate: latency CDFs (``reports/bench-sla.png``) and, for the
worker, the mean per stage from its Prometheus histograms scraped before and after.

To weigh a setting: the ``trial`` variant is the worker with ``--trial-env`` on top,
and ``--compare-at`` replaces the search with fixed rates held in alternation
(``tests/benchmarks/sla_compare.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer

from runtime.kafka import KafkaSettings
from schemas.codec import request_codec, wall_clock_ms
from schemas.records import RecRequest
from tests.benchmarks.e2e import (
    Running,
    add_variant_flags,
    cycle,
    saturation_bursts,
    variants_up,
    warm_up,
)
from tests.benchmarks.measured import tally
from tests.benchmarks.report import percentile
from tests.benchmarks.sla_compare import compare, compare_report, parse_rates
from tests.benchmarks.sla_report import Capacity, Trial, hold_line, report
from tests.benchmarks.sla_search import (
    LateCounter,
    RateSearch,
    Sla,
    histogram_totals,
    poisson_schedule,
    stage_means,
    triton_totals,
)


@dataclass
class Sent:
    due_ns: dict[str, int]  # request id -> scheduled time
    actual_ns: list[int]
    stopped_early: bool

    @property
    def offered_rps(self) -> float:
        span = (self.actual_ns[-1] - self.actual_ns[0]) / 1e9 if self.actual_ns else 0.0
        return (len(self.actual_ns) - 1) / span if span > 0 else 0.0

    @property
    def lag_p99_ms(self) -> float:
        lags = [(a - d) / 1e6 for a, d in zip(self.actual_ns, self.due_ns.values(), strict=True)]
        return percentile(lags, 99)


def send_open_loop(
    kafka: KafkaSettings, v: Running, users: Sequence[int], offsets: Sequence[float],
    prefix: str, sla: Sla, judged_from: float = 0.0,
) -> Sent:  # fmt: skip
    """Send on schedule; stop once the late requests alone make the rate fail.

    Requests due before ``judged_from`` (s) are the warm-up: sent, never counted.
    """
    producer = Producer(kafka.client_config(**{"linger.ms": 0, "acks": "1"}))
    codec = request_codec()
    late = LateCounter(sla.latency_ms)
    planned = sum(offset >= judged_from for offset in offsets)
    sent = Sent({}, [], False)
    start_ns, start = time.time_ns(), time.perf_counter()
    next_check = start + judged_from + 0.25
    for n, (user, offset) in enumerate(zip(users, offsets, strict=True)):
        delay = start + offset - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        judged = offset >= judged_from
        request_id = f"{prefix}-{n}" if judged else f"{prefix}-warm-{n}"
        request = RecRequest(request_id=request_id, user_id=user, ts=wall_clock_ms(), k=10)
        producer.produce(v.topics.requests, codec.encode(request), key=str(user).encode())
        producer.poll(0)
        if not judged:
            continue
        sent.due_ns[request_id] = start_ns + int(offset * 1e9)
        sent.actual_ns.append(time.time_ns())
        late.add(request_id, sent.due_ns[request_id])
        if time.perf_counter() >= next_check:
            next_check += 0.25
            late.update(v.collector.arrived, time.time_ns())
            if sla.doomed(late.late, late.degraded, planned):
                sent.stopped_early = True
                break
    producer.flush(30)
    return sent


def scrape(v: Running) -> dict[str, tuple[float, float]] | None:
    """The workers' histogram totals, summed over the group's processes; None for a
    variant without /metrics (the naive one)."""
    totals: dict[str, tuple[float, float]] = {}
    try:
        for process in v.processes:
            for key, (total, count) in histogram_totals(process.metrics()).items():
                total0, count0 = totals.get(key, (0.0, 0.0))
                totals[key] = (total0 + total, count0 + count)
    except OSError:
        return None
    # Triton's own share of the rank stage (the server is the worker's alone while it holds).
    if v.triton_metrics and v.name in ("worker", "trial"):
        try:
            with urllib.request.urlopen(v.triton_metrics, timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return totals
        totals.update(triton_totals(text, "ranker_python"))
    return totals


def held_rate(
    kafka: KafkaSettings, v: Running, users: Sequence[int], rate: float,
    args: argparse.Namespace, sla: Sla, tag: str = "",
) -> Trial:  # fmt: skip
    """``rate`` held once; ``tag`` tells apart the request ids of holds at the same rate."""
    seconds = max(args.seconds, min(args.min_requests / rate, args.max_seconds))
    offsets = poisson_schedule(rate, args.warmup + seconds, seed=f"{args.seed}:{rate:.6f}")
    before = scrape(v)
    sent = send_open_loop(kafka, v, cycle(users, len(offsets)), offsets,
                          f"{v.name}-{rate:.3f}{tag}", sla, judged_from=args.warmup)  # fmt: skip
    v.collector.wait_for(list(sent.due_ns), args.answer_timeout)
    measured = tally(sent.due_ns, dict(v.collector.arrived))
    after = scrape(v)
    # A backlog left by an overloaded rate would load the next one: let it clear first.
    v.collector.wait_for(list(sent.due_ns), args.drain_timeout)
    time.sleep(args.pause)
    verdict = sla.judge(measured.latencies_ms, measured.sent, measured.failures)
    if sent.stopped_early:
        verdict = dataclasses.replace(verdict, passed=False, why=f"stopped early: {verdict.why}")
    stages = stage_means(before, after) if before is not None and after is not None else None
    return Trial(rate, measured, sent.offered_rps, sent.lag_p99_ms, verdict, stages)


def search_all(
    running: Sequence[Running], kafka: KafkaSettings, users: Sequence[int],
    args: argparse.Namespace, sla: Sla,
) -> dict[str, tuple[RateSearch, list[Trial]]]:  # fmt: skip
    """Every variant's search, advanced in alternation: one held rate per variant in turn."""
    state: dict[str, tuple[RateSearch, list[Trial]]] = {
        v.name: (
            RateSearch(
                args.start_rate, args.factor, args.max_rungs, args.bisect_steps, args.rehold
            ),
            [],
        )
        for v in running
    }
    while True:
        todo = [(v, rate) for v in running if (rate := state[v.name][0].next_rate()) is not None]
        if not todo:
            return state
        for v, rate in todo:
            search, trials = state[v.name]
            # A rate held again gets request ids of its own: the first hold's late
            # answers must not count for it.
            holds = sum(t.rate == rate for t in trials)
            trial = held_rate(kafka, v, users, rate, args, sla, f"-{holds}" if holds else "")
            search.record(rate, trial.verdict.passed)
            trials.append(trial)
            again = ", held again" if search.holding_again else ""
            print(hold_line(v.name, trial) + again, flush=True)


def run(args: argparse.Namespace, tmp: Path) -> list[Capacity]:
    sla = Sla(args.sla_ms, args.max_error_rate)
    with variants_up(args, tmp) as (kafka, world, running):
        warm_up(running, kafka, world)
        bursts = saturation_bursts(running, kafka, world, args)
        state = search_all(running, kafka, world.users, args, sla)
    return [Capacity(name, bursts[name], *state[name]) for name in state]


def run_compare(args: argparse.Namespace, tmp: Path) -> None:
    sla = Sla(args.sla_ms, args.max_error_rate)
    with variants_up(args, tmp) as (kafka, world, running):
        warm_up(running, kafka, world)
        if args.rounds:
            saturation_bursts(running, kafka, world, args)
        kept = compare(
            running,
            lambda v, rate, n: held_rate(kafka, v, world.users, rate, args, sla, f"-{n}"),
            parse_rates(args.compare_at),
            args.repeats,
            args.discard_first,
        )
    compare_report(kept, args.sla_ms)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.sla",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--events", type=int, default=20_000, help="stream events for features")
    add("--candidates", type=int, default=100, help="candidates per request")
    add_variant_flags(parser)
    add("--burst", type=int, default=1500, help="closed-loop burst, the same for every variant")
    add("--rounds", type=int, default=3, help="alternating burst rounds (median kept)")
    add("--timeout", type=float, default=240, help="wait for a burst's answers (s)")
    add("--sla-ms", type=float, default=50, help="p99 request->answer latency bound (ms)")
    add("--max-error-rate", type=float, default=0.001, help="errors must stay under this share")
    add("--seconds", type=float, default=20, help="shortest hold of one rate (s)")
    add("--min-requests", type=int, default=1000, help="hold longer to reach this many requests")
    add("--max-seconds", type=float, default=60, help="but no longer than this (s)")
    add("--start-rate", type=float, default=25, help="first rung of the ladder (rps)")
    add("--factor", type=float, default=2, help="ladder step: each rung is this times the last")
    add("--max-rungs", type=int, default=8, help="most ladder rungs")
    add("--bisect-steps", type=int, default=3, help="bisections after the first failing rung")
    add("--rehold", type=int, default=1,
        help="hold a failing rate this often again; it fails if every hold does")  # fmt: skip
    add("--warmup", type=float, default=2, help="first seconds of each held rate, not judged")
    add("--answer-timeout", type=float, default=10, help="after the last send; later = error")
    add("--drain-timeout", type=float, default=60, help="wait for a backlog to clear (s)")
    add("--pause", type=float, default=1, help="rest between held rates (s)")
    add("--seed", type=int, default=7, help="seed of the arrival schedules")
    add(
        "--compare-at",
        default="",
        metavar="RATES",
        help="no search: hold these rates (e.g. 400,480) for every variant in alternation",
    )
    add("--repeats", type=int, default=3, help="--compare-at: rounds over the rates")
    add("--discard-first", type=int, default=1, help="--compare-at: warm-up rounds not kept")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-sla-") as tmp_name:
        if args.compare_at:
            run_compare(args, Path(tmp_name))
            print(f"wall {time.monotonic() - started:.0f} s")
            return 0
        capacities = run(args, Path(tmp_name))
    print(f"wall {time.monotonic() - started:.0f} s")
    report(capacities, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
