"""``streamrec-eval-online`` (``make eval-online``): replay a real period through the running loop.

1. The ranker is trained on the data before its own hold-out cut (``make
   train``'s split: the Taobao 9-day file's days 1-8, the last tenth of a
   MovieLens folder's span held out), or taken from ``--model-dir``.
2. The training prefix is materialized into two Redis namespaces (the feature
   job's reference computation, written through the writer's own code).
3. The Flink feature job, the feature writer (streaming namespace) and one
   worker per variant start on topics named for this run; the held-out period
   is replayed paced by event time (``--duration-s`` of wall time), each event
   followed at once by a request carrying it (``--request-rate`` samples them).
4. Each answer is scored against what that user did next (the distinct items
   of the next ``--horizon-min`` minutes of event time): hit@10 and NDCG@10 for
   any item and for items new to the user, per variant, on the same requests.

Prints a table, writes a plot and a JSON summary under ``--out``, and ends with
``RESULT hit_at_10=… batch_hit_at_10=… popular_hit_at_10=… norank_hit_at_10=…
exclude_viewed_hit_at_10=… fresh_answers=… popular_share=… answers=…``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from jobs.datasets import RowAudit, read_dataset
from jobs.demo.services import demo_services, ensure_model
from jobs.evaluate.materialize import materialize, prefix_updates
from jobs.evaluate.online import VARIANTS, RunNames, run_online, variant
from jobs.evaluate.plan import asking, shifted, speed_for, split_at, time_offset
from jobs.evaluate.report import (
    evaluate_variant,
    fresh_share,
    hourly_hits,
    paired_hit_ratio,
    plot,
    popular_result,
    popular_share,
    ranked_lists,
    result_line,
    side_by_side,
    summary_record,
    table,
)
from jobs.evaluate.truth import next_items, per_request_hits
from jobs.ranker.events import PROFILES, holdout_start, in_range, load_events
from runtime.online.connect import connect
from runtime.settings import cache_dir, model_dir, stack_home
from schemas.codec import wall_clock_ms
from schemas.ranking import POPULAR_FILE

DEFAULT_DATASET = "taobao-9days"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-eval-online",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog=(
            "Services as for streamrec-demo: STREAMREC_KAFKA_BOOTSTRAP_SERVERS with "
            "STREAMREC_REDIS_URL, and STREAMREC_TRITON_URL, name running ones; otherwise the "
            "local stack starts what is missing. STREAMREC_MODEL_DIR is make train's model "
            "(the Taobao 9-day default); models for other data go under STREAMREC_CACHE_DIR; "
            "part logs under STREAMREC_STACK_HOME."
        ),
    )
    parser.add_argument("--dataset", default=DEFAULT_DATASET, choices=sorted(PROFILES))
    parser.add_argument("--file", type=Path, help="data file (MovieLens: its folder); "
                        "default: the dataset's file in the data dir")  # fmt: skip
    parser.add_argument("--model-dir", type=Path, help="trained ranker to serve (default: "
                        "make train's for the Taobao 9-day file, else trained here)")  # fmt: skip
    parser.add_argument("--duration-s", type=float, default=300.0,
                        help="wall time the replayed period is paced into")  # fmt: skip
    parser.add_argument("--request-rate", type=float, default=1.0,
                        help="share of replayed events followed by a request (seeded)")  # fmt: skip
    parser.add_argument("--horizon-min", type=float, default=30.0,
                        help="what the user did next: this many minutes of event time")  # fmt: skip
    parser.add_argument("--variants", default=",".join(v.name for v in VARIANTS),
                        help="workers to compare (popular is always scored)")  # fmt: skip
    parser.add_argument("--answer-timeout", type=float, default=600.0,
                        help="seconds to wait for each variant's answers")  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("reports/eval-online"))
    parser.add_argument("--keep-stack", action="store_true", help="leave the stack running")
    return parser


def eval_model_dir(cache: Path, dataset: str, path: Path | None) -> Path:
    """Where the model for one data file lives: a model trained on another file of the same
    dataset may have seen the period this one replays, so each file has its own."""
    source = str(path.resolve()) if path else "default"
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    return (cache / "eval" / f"{dataset}-{digest}" / "model").resolve()


def trained_model(dataset: str, path: Path | None, given: Path | None) -> Path:
    """The model to serve: the given one, make train's, or one trained now on ``dataset``."""
    if given is not None:
        return given.resolve()
    if dataset == DEFAULT_DATASET and path is None:
        directory = model_dir().resolve()
        ensure_model(directory)
        return directory
    directory = eval_model_dir(cache_dir(), dataset, path)
    if not (directory / POPULAR_FILE).exists():
        print(f"training a ranker on {dataset} into {directory}", file=sys.stderr)
        argv = [sys.executable, "-m", "jobs.ranker", "--dataset", dataset, "--out", str(directory)]
        subprocess.run(argv + (["--file", str(path)] if path else []), check=True)
    return directory


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    chosen = [variant(name.strip()) for name in args.variants.split(",") if name.strip()]
    model = trained_model(args.dataset, args.file, args.model_dir)

    # The ranker's own cut: the model never saw the replayed period.
    profile = PROFILES[args.dataset]
    columns = in_range(load_events(args.dataset, args.file)[0], profile)
    cut_ms = holdout_start(columns, profile)
    first, last = int(columns.ts.min()), int(columns.ts.max())
    events = [e for e in read_dataset(args.dataset, args.file, RowAudit()) if first <= e.ts <= last]
    plan = split_at(events, cut_ms)
    speed = speed_for(plan.span_ms, args.duration_s)
    asks = asking(len(plan.replay), args.request_rate, args.seed)
    truths_all = next_items(plan.prefix, plan.replay, int(args.horizon_min * 60_000))
    print(f"{args.dataset}: {len(plan.prefix)} events before the cut, {len(plan.replay)} replayed "
          f"at {speed:.0f}x, {sum(asks)} requests", file=sys.stderr)  # fmt: skip

    # Times move to the present: the replay ends about when its pacing does.
    offset = time_offset(plan, speed, wall_clock_ms())
    prefix, replayed = shifted(plan.prefix, offset), shifted(plan.replay, offset)
    run_id = f"eval-{args.dataset}-{int(time.time())}"
    names = RunNames(run_id)
    log_dir = stack_home() / "eval" / run_id
    with demo_services(model, args.keep_stack) as services:
        client = connect(services.redis_url)
        updates = prefix_updates(prefix, cut_ms + offset)
        stores = sorted({v.store for v in chosen})
        written = materialize(client, updates, [names.project(s) for s in stores])
        client.close()
        print(f"materialized the prefix: {written} rows into {', '.join(stores)}", file=sys.stderr)
        answers = run_online(services, names, chosen, model, log_dir, replayed, asks, speed,
                             10, args.answer_timeout)  # fmt: skip

    asked = [n for n, ask in enumerate(asks) if ask]
    request_ids = [f"eval-{n}" for n in asked]
    truths = [truths_all[n] for n in asked]
    times = [plan.replay[n].ts for n in asked]
    popular = json.loads((model / POPULAR_FILE).read_text())
    results = {v.name: evaluate_variant(v.name, request_ids, truths, answers[v.name])
               for v in chosen}  # fmt: skip
    results["popular"] = popular_result(popular, truths)
    stream = answers.get("stream", {})
    fresh, share = fresh_share(stream), popular_share(stream)

    lines = table(list(results.values()))
    judged = results["popular"].any_item.judged
    lines.append(f"requests {len(asked)}, judged {judged} (a next item within "
                 f"{args.horizon_min:g} min), judged on new items "
                 f"{results['popular'].new_item.judged}")  # fmt: skip
    verdicts = Counter(rec.trigger_features for rec in stream.values())
    lines.append(f"stream: fresh answers {fresh:.4f} (trigger from the store "
                 f"{verdicts['store']}, folded in {verdicts['folded']}, missing "
                 f"{verdicts['missing']}), items from the popular route {share:.4f}")  # fmt: skip
    if "stream" in answers and "batch" in answers:
        lines += side_by_side(plan.replay, asked, request_ids, truths, answers["stream"],
                              answers["batch"])  # fmt: skip
    print("\n".join(lines))
    series = {name: hourly_hits(ranked_lists(request_ids, answers[name]), truths, times,
                                plan.replay[0].ts) for name in answers}  # fmt: skip
    series["popular"] = hourly_hits([popular[:10]] * len(truths), truths, times, plan.replay[0].ts)
    out = args.out / args.dataset
    title = f"hit@10 over the replayed period ({args.dataset})"
    figure = plot(series, title, out / "hit_at_10.png")
    summary = summary_record(results, verdicts, fresh, share)
    summary |= {"dataset": args.dataset, "speed": speed, "requests": len(asked)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"plot: {figure}", file=sys.stderr)
    answered_all = all(r.answered == len(asked) for n, r in results.items() if n != "popular")
    ratio = None
    if "stream" in answers and "norank" in answers:
        ratio = paired_hit_ratio(
            per_request_hits(ranked_lists(request_ids, answers["stream"]), truths, 10),
            per_request_hits(ranked_lists(request_ids, answers["norank"]), truths, 10),
        )
        print(f"hit@10 stream / norank: {ratio[0]:.3f} (paired bootstrap 95% interval "
              f"{ratio[1]:.3f}-{ratio[2]:.3f})")  # fmt: skip
    print(result_line(results, fresh, share, len(stream), ratio))
    return 0 if answered_all else 1


if __name__ == "__main__":
    sys.exit(main())
