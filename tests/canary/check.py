"""``make canary-check``: the model lifecycle end to end under a steady request stream.

On a stack of its own (Kafka, Redis, Triton and MLflow on free ports) with the
trained ranker and real Taobao features in Redis:

1. three versions are registered in MLflow: the ranker (aliased ``champion``), the
   ranker again (a good candidate) and a copy made to fail at traffic shapes
   (:mod:`tests.support.bad_model`); each is published from the registry, and the
   champion is served;
2. **split**: the champion and the candidate are split 50/50 for ``--split-requests``
   distinct users; the share each got, and that every answer names its variant;
3. **good canary**: ``Canary.run`` on the candidate under the stream: promoted, and the
   registry alias moves to its version;
4. **bad canary**: the broken version: rolled back, the reason recorded in the registry.

Meanwhile a stream of ``--rate`` requests/s runs throughout; at the end every request
must be answered, and no answer outside a canary's share may be degraded.
``RESULT good_promoted=… bad_rolled_back=… rollback_s=… failed_outside_canary=…
split_error_pct=… registry_versions=…``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from inference.serving import repository
from inference.serving.canary import Guards, parse_steps
from inference.serving.canary_run import (
    CHAMPION_ALIAS,
    Canary,
    Outcome,
    Plan,
    RoutingStore,
    pinned_routing,
)
from inference.serving.drain import Drain
from inference.serving.worker_metrics import scrape
from jobs.demo.services import SERVED_MODEL, ensure_model
from runtime.model_registry import REGISTERED_MODEL, RegistryClient
from runtime.settings import DEFAULT_MODEL_DIR
from schemas.codec import wall_clock_ms
from schemas.records import Recommendation, RecRequest
from schemas.routing import Routing, Variant, routing_key, variant_of
from tests.benchmarks.report import print_table, result_line
from tests.canary.lifecycle import PROJECT, Lifecycle, lifecycle, say
from tests.canary.plot import plot_timeline
from tests.conftest import REPO_ROOT
from tests.inference.worker.harness import produce
from tests.support.bad_model import nan_at_traffic_shapes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.canary.check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s throughout")
    parser.add_argument("--split-requests", type=int, default=10_000)
    parser.add_argument("--steps", default="1,5,25,50,100")
    parser.add_argument("--hold", type=float, default=15.0, help="seconds per step")
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / DEFAULT_MODEL_DIR)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "canary")
    args = parser.parse_args(argv)
    ensure_model(args.model_dir)
    with lifecycle(args.model_dir, args.rate) as life:
        return check(args, life)


def check(args: argparse.Namespace, life: Lifecycle) -> int:
    _, good = life.register("candidate", args.model_dir)
    _, bad = life.register("broken", nan_at_traffic_shapes(args.model_dir, life.home / "broken"))
    store = RoutingStore(life.redis, routing_key(PROJECT, SERVED_MODEL))
    plan = Plan(steps=parse_steps(args.steps), hold_s=args.hold, poll_s=1.0, settle_s=2.0,
                guards=Guards())  # fmt: skip
    canary = Canary([life.control], life.model_dir, store, lambda: scrape([life.metrics_url]),
                    life.registry)  # fmt: skip
    split_users = life.users[len(life.users) // 2 :][: args.split_requests]
    split = split_check(life, store, split_users, life.champion, good)
    # The stream's requests that queued behind the split burst are answered before any
    # canary window opens: their wait is the burst's, not a version's.
    answers_to(life, life.stream.sent_ids(), timeout_s=600)
    say("good canary")
    promoted = canary.run(good, plan)
    say("bad canary")
    rolled_back = canary.run(bad, plan)
    sent = life.stream.stop()
    say(f"stream stopped: {len(sent)} requests; waiting for every answer")
    life.reader.read_until(len(sent) + len(split_users), timeout_s=300, settle_s=2.0)
    recs = [r for r in life.reader.recommendations() if r.request_id in sent]
    return report(args, recs, sent, split, promoted, rolled_back, life.registry)


def split_check(
    life: Lifecycle, store: RoutingStore, users: list[int], champion: int, candidate: int
) -> dict[str, float]:
    """50/50 between the champion and the candidate for one request per user, in the
    order of inference/serving/drain.py: loaded and ready, routed, and at the end the
    candidate unloaded only once the worker has acknowledged routing without it."""
    config = repository.read_config(life.model_dir)
    life.control.load(SERVED_MODEL, repository.with_versions(config, [champion, candidate]))
    life.control.wait_ready(SERVED_MODEL, [champion, candidate])
    routing = Routing(SERVED_MODEL, [Variant("b", candidate, 50.0), Variant("a", champion, 50.0)],
                      1, wall_clock_ms())  # fmt: skip
    # The split's requests go out once the worker has it in force (not a poll's guess).
    say(f"split routed: {store.retire(routing, set(), Drain(fallback_s=1.0)).line()}")
    now = wall_clock_ms()
    asked = [RecRequest(f"split-{u}", u, now, k=10) for u in users]
    say(f"split: {len(asked)} requests, 50/50")
    produce(life.kafka, life.topics.requests, asked)
    ids = {r.request_id for r in asked}
    answers = answers_to(life, ids, timeout_s=600)
    # The stream keeps coming: the candidate goes once no batch can still ask for it.
    ended = pinned_routing(life.model_dir, champion, 2, "split ended")
    say(f"split ended: {store.retire(ended, {candidate}, Drain()).line()}")
    life.control.load(SERVED_MODEL, repository.with_versions(config, [champion]))
    wrong = sum(r.variant != variant_of(routing, r.user_id).name for r in answers)
    share = Counter(r.variant for r in answers)["a"] / max(1, len(answers)) * 100
    return {"answers": len(answers), "asked": len(asked), "wrong_variant": wrong,
            "share_a_pct": share, "error_pct": abs(share - 50)}  # fmt: skip


def answers_to(life: Lifecycle, ids: set[str], timeout_s: float) -> list[Recommendation]:
    """The answers to ``ids`` once every one of them has arrived (AssertionError if not)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answers = [r for r in life.reader.recommendations() if r.request_id in ids]
        if len({r.request_id for r in answers}) >= len(ids):
            return answers
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(answers)} of {len(ids)} answered in {timeout_s:.0f} s")
        life.reader.settle(1.0)


def report(
    args: argparse.Namespace,
    recs: list[Recommendation],
    sent: dict[str, float],
    split: dict[str, float],
    promoted: Outcome,
    rolled_back: Outcome,
    registry: RegistryClient,
) -> int:
    for line in promoted.timeline + rolled_back.timeline:
        print(line)
    outside = [r for r in recs if r.degraded and r.variant != "canary"]
    by_variant = Counter((r.variant or "default", r.degraded) for r in recs)
    print_table(
        ["variant", "answers", "degraded"],
        [[v, str(by_variant[(v, False)] + by_variant[(v, True)]), str(by_variant[(v, True)])]
         for v in sorted({v for v, _ in by_variant})],
    )  # fmt: skip
    versions = len(registry.search_versions(REGISTERED_MODEL))
    alias = registry.get_by_alias(REGISTERED_MODEL, CHAMPION_ALIAS).version
    plot_timeline(recs, args.out / "canary.png")
    lost = len(sent) - len({r.request_id for r in recs})
    ok = (promoted.promoted and rolled_back.breach is not None and not outside and not lost
          and split["error_pct"] < 2 and not split["wrong_variant"])  # fmt: skip
    print(f"registry alias {CHAMPION_ALIAS} -> version {alias}; stream lost {lost}")
    print(f"split: {split}")
    print("PASS" if ok else "FAIL")
    print(
        result_line(
            good_promoted=int(promoted.promoted),
            bad_rolled_back=int(rolled_back.breach is not None and not rolled_back.promoted),
            rollback_s=f"{rolled_back.rollback_s or float('nan'):.1f}",
            failed_outside_canary=len(outside),
            split_error_pct=f"{split['error_pct']:.2f}",
            registry_versions=versions,
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
