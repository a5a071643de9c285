"""Real datasets as streams of :class:`~schemas.records.BehaviorEvent`.

Each adapter reads its files lazily and reports rows it cannot use in a
:class:`RowAudit` instead of failing: a real file has a few bad rows, and one
must not stop a replay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from jobs.datasets.audit import RowAudit
from jobs.datasets.events_log import read_events_log
from jobs.datasets.movielens import read_movielens
from jobs.datasets.taobao import read_taobao
from schemas.records import BehaviorEvent

__all__ = ["DATASETS", "RowAudit", "data_dir", "default_path", "read_dataset"]

# "events": the events topic's records as jobs.retrain exports them (no default file).
DATASETS = ("taobao", "taobao-9days", "movielens", "events")

# Paths below the data folder; `taobao` is the time-ordered stream used for replay.
_DEFAULT_FILES = {
    "taobao": Path("taobao", "UserBehavior_stream_20171126_0900-1110.csv"),
    "taobao-9days": Path("taobao", "UserBehavior_first_users_9days.csv"),
    "movielens": Path("movielens-latest-small"),
}


def data_dir() -> Path:
    """``STREAMREC_DATA_DIR``, else the ``shared/data`` folder beside the repository."""
    configured = os.environ.get("STREAMREC_DATA_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def default_path(dataset: str) -> Path:
    if dataset not in _DEFAULT_FILES:
        raise FileNotFoundError(f"{dataset} has no default file: pass --file")
    return data_dir() / _DEFAULT_FILES[dataset]


def read_dataset(dataset: str, path: Path | None, audit: RowAudit) -> Iterator[BehaviorEvent]:
    """Events of ``dataset`` read from ``path`` (a file, or MovieLens' folder)."""
    source = path or default_path(dataset)
    if not source.exists():
        raise FileNotFoundError(
            f"{dataset} data not found at {source}; pass --file or set STREAMREC_DATA_DIR"
        )
    if dataset == "movielens":
        return read_movielens(source, audit)
    if dataset in ("taobao", "taobao-9days"):
        return read_taobao(source, audit)
    if dataset == "events":
        return read_events_log(source, audit)
    raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
