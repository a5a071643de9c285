"""``streamrec-replay``: produce a real dataset to the user-behaviour topic.

Events are keyed by user. By default they go out as fast as the broker takes
them; ``--speed N`` paces them by their own timestamps, N times real time.
``--request-rate P`` also sends a recommendation request for the user after
each event with probability P. Bad rows are counted and reported, never fatal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from jobs.datasets import DATASETS
from jobs.replay.run import ReplayOptions, ReplaySummary, run_replay
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics, request_topic_spec
from schemas.topics import REC_REQUESTS, USER_BEHAVIOR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dataset", choices=DATASETS, default="taobao")
    parser.add_argument("--file", type=Path, help="dataset file (MovieLens: its folder)")
    parser.add_argument("--topic", default=USER_BEHAVIOR)
    parser.add_argument("--request-topic", default=REC_REQUESTS)
    KafkaSettings.add_flags(parser)
    parser.add_argument("--speed", type=float, default=0.0, help="x real time; 0 = max speed")
    parser.add_argument("--request-rate", type=float, default=0.0, help="requests per event")
    parser.add_argument("--request-k", type=int, default=20, help="k of derived requests")
    parser.add_argument("--seed", type=int, default=7, help="seed of the request sampler")
    parser.add_argument("--limit", type=int, help="stop after this many events")
    parser.add_argument(
        "--loops", type=int, default=1, help="play the file this many times, each pass later"
    )
    parser.add_argument("--sort", action="store_true", help="send in event-time order")
    parser.add_argument("--rebase-time", action="store_true", help="shift the first event to now")
    parser.add_argument(
        "--partitions", type=int, default=4, help="partitions of topics this creates"
    )
    parser.add_argument("--summary-json", type=Path, help="also write the summary here")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def options_from(args: argparse.Namespace) -> ReplayOptions:
    return ReplayOptions(
        dataset=args.dataset,
        path=args.file,
        topic=args.topic,
        request_topic=args.request_topic,
        speed=args.speed,
        request_rate=args.request_rate,
        request_k=args.request_k,
        seed=args.seed,
        limit=args.limit,
        sort_by_time=args.sort,
        rebase_time=args.rebase_time,
        loops=args.loops,
    )


def summary_lines(options: ReplayOptions, summary: ReplaySummary) -> list[str]:
    delivery = summary.delivery
    lines = [
        f"rows read        {summary.audit.summary()}",
        f"events produced  {summary.events} -> {options.topic}",
        f"requests         {summary.requests} -> {options.request_topic}",
        f"delivered        {delivery.delivered} of {delivery.sent}, failed {delivery.failed}",
        f"elapsed          {summary.elapsed_s:.2f} s, {summary.events_per_s:,.0f} events/s",
    ]
    lines += [f"bad row          {example}" for example in summary.audit.examples]
    lines += [f"delivery error   {error}" for error in delivery.errors]
    return lines


def summary_dict(summary: ReplaySummary) -> dict[str, object]:
    return {
        "rows": summary.audit.rows,
        "bad_rows": dict(summary.audit.bad),
        "filtered_rows": summary.audit.filtered,
        "events": summary.events,
        "requests": summary.requests,
        "delivered": summary.delivery.delivered,
        "failed": summary.delivery.failed,
        "elapsed_s": round(summary.elapsed_s, 3),
        "events_per_s": round(summary.events_per_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = KafkaSettings.load(None, args)
    options = options_from(args)
    ensure_topics(
        settings,
        [
            TopicSpec(options.topic, args.partitions),
            request_topic_spec(options.request_topic, args.partitions),
        ],
    )
    print(f"replaying {options.dataset} to {settings.describe()}", file=sys.stderr)
    with tqdm(unit="ev", disable=args.no_progress, file=sys.stderr, total=args.limit) as bar:
        summary = run_replay(options, settings, on_progress=bar.update)
    for line in summary_lines(options, summary):
        print(line)
    if args.summary_json:
        args.summary_json.write_text(json.dumps(summary_dict(summary), indent=2) + "\n")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
