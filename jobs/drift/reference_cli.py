"""``python -m jobs.drift reference``: build the reference table from a dataset's events."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

from jobs.datasets import DATASETS, RowAudit, read_dataset
from jobs.drift.reference import REFERENCE_FILE, reference_frame, save_reference

logger = logging.getLogger("jobs.drift.reference")
DEFAULT_MAX_ROWS = 200_000


def add_reference_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "reference",
        help="build the drift reference from a dataset (the training run calls this)",
        description="Run the feature job's pure-Python reference over a dataset's events "
        "and save the drift columns of its changelog rows as parquet. The default, the "
        "replayed Taobao stream, is the population the served model sees; the 9-day "
        "training file (294 heavy users) is not, and would make every check alert.",
    )
    parser.add_argument("--dataset", default="taobao", choices=DATASETS)
    parser.add_argument("--file", type=Path, help="dataset path (default: the shared data)")
    parser.add_argument(
        "--out", type=Path, required=True, help=f"output parquet (<model dir>/{REFERENCE_FILE})"
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help=f"uniform sample of at most this many rows, seeded (default {DEFAULT_MAX_ROWS}; "
        "0 keeps all): the distribution is the same and each check runs faster",
    )
    parser.add_argument("--seed", type=int, default=0)


def run_reference(args: argparse.Namespace) -> int:
    started = time.monotonic()
    audit = RowAudit()
    events = list(read_dataset(args.dataset, args.file, audit))
    frame = reference_frame(events)
    if args.max_rows and len(frame) > args.max_rows:
        frame = frame.sample(args.max_rows, random_state=args.seed).reset_index(drop=True)
    path = save_reference(frame, args.out)
    logger.info("events: %s", audit.summary())
    print(
        f"drift reference: {len(frame)} rows from {len(events)} {args.dataset} events "
        f"-> {path} ({time.monotonic() - started:.1f} s)",
        # stderr: `make train` runs this last and must still end its output with RESULT.
        file=sys.stderr,
    )
    return 0
