"""``python -m jobs.demo`` (``make demo``): the foundation and the feature pipeline on real data.

1. Start Kafka and Redis (unless ``STREAMREC_KAFKA_BOOTSTRAP_SERVERS`` points at
   a cluster; then ``STREAMREC_REDIS_URL`` names the Redis).
2. Replay the 110,300-event Taobao stream with requests mixed in, into topics
   named for this run, and read both back through the decoder and dead-letter
   router every consumer uses: counts in must equal counts out.
3. Run the feature job over the stream (Flink mini-cluster, to the end of the
   topic) and the feature writer, then read a few users' features back through
   Feast's ``get_online_features``.

Exits 1 if anything was lost, duplicated, reordered or dead-lettered.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from jobs.datasets import RowAudit, read_dataset
from jobs.demo.features import feature_step, show_users
from jobs.demo.ingest import count_requests, read_back, report
from jobs.localstack.session import kafka_for_run
from jobs.localstack.settings import StackSettings
from jobs.replay.run import ReplayOptions, run_replay
from jobs.replay.verify import compare
from schemas.kafka import TopicSpec, dead_letter_spec, ensure_topics
from schemas.topics import dead_letter_topic

PARTITIONS = 4
SHOWN_USERS = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.demo", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--file", type=Path, help="Taobao stream file (default: shared data)")
    parser.add_argument("--request-rate", type=float, default=0.05)
    parser.add_argument("--skip-features", action="store_true", help="stop after the ingest check")
    parser.add_argument("--keep-stack", action="store_true", help="leave the stack running")
    args = parser.parse_args(argv)
    run_id = time.strftime("demo-%Y%m%d-%H%M%S")
    source, requests = f"{run_id}.user-behavior", f"{run_id}.rec-requests"
    options = ReplayOptions(path=args.file, topic=source, request_topic=requests,
                            request_rate=args.request_rate)  # fmt: skip
    redis_url = os.environ.get("STREAMREC_REDIS_URL") or StackSettings.from_env().redis_url
    events = list(read_dataset(options.dataset, options.path, RowAudit()))
    with kafka_for_run(args.keep_stack) as kafka:
        ensure_topics(kafka, [TopicSpec(source, PARTITIONS), TopicSpec(requests, PARTITIONS),
                              dead_letter_spec(dead_letter_topic(source))])  # fmt: skip
        with tqdm(unit="ev", desc="replay", file=sys.stderr) as bar:
            summary = run_replay(options, kafka, on_progress=bar.update)
        consumed, dead_letters = read_back(kafka, source, {})
        requests_read = count_requests(kafka, requests, {})
        trip = compare(events, consumed)
        lines = report(trip, dead_letters, (summary.requests, requests_read))
        ok = trip.exact and summary.ok and requests_read == summary.requests and not dead_letters
        if ok and not args.skip_features:
            counts, refused = feature_step(kafka, redis_url, source)
            lines += feature_report(counts, refused)
            busiest = Counter(e.user_id for e in events).most_common(SHOWN_USERS)
            lines += show_users(redis_url, [user for user, _ in busiest])
            ok = refused == 0 and set(counts) == {"user_recent", "user_window", "item_window",
                                                  "category_window"}  # fmt: skip
    print("\n".join(lines))
    return 0 if ok else 1


def feature_report(counts: Counter[str], refused: int) -> list[str]:
    rows = [(f"feature rows: {view}", str(count)) for view, count in sorted(counts.items())]
    rows.append(("events refused by the job", str(refused)))
    return [f"{label:<30}{value:>12}" for label, value in rows]
