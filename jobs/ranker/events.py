"""A dataset's events as sorted numpy columns, and the split by time.

Everything downstream (windows, sequences, baselines) works on these arrays,
sorted by user then time, so lookups are ``searchsorted`` calls rather than
Python loops: the whole job must stay within minutes on two cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import numpy.typing as npt

from jobs.datasets import RowAudit, read_dataset
from jobs.ranker.errors import TrainingDataError
from schemas.ranking import USER_DENSE_FEATURES

DAY_MS = 24 * 3600 * 1000
# Behaviour codes index the count columns in the contract's order (pv, cart, fav, buy).
BEHAVIOR_CODES = {
    name.removesuffix("_count"): code for code, name in enumerate(USER_DENSE_FEATURES)
}

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]


@dataclass(frozen=True)
class DatasetProfile:
    """How a dataset is cut: its valid time range, calendar zone and held-out span."""

    utc_offset_hours: int = 0
    start: str | None = None  # first valid local date, inclusive
    end: str | None = None  # last valid local date, inclusive
    holdout_days: int = 1


PROFILES = {
    # Days are calendar days in China; a few rows carry timestamps outside the 9 days.
    "taobao-9days": DatasetProfile(8, "2017-11-25", "2017-12-03", holdout_days=1),
    "taobao": DatasetProfile(8, "2017-11-25", "2017-12-03", holdout_days=1),
    # 22 years of ratings: one day holds almost nothing, so the last year is held out.
    "movielens": DatasetProfile(0, holdout_days=365),
}


@dataclass(frozen=True)
class Events:
    """Event columns sorted by (user, ts); ``behavior`` holds ``BEHAVIOR_CODES``."""

    user: I64
    item: I64
    category: I64
    behavior: I8
    ts: I64

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, mask: npt.NDArray[np.bool_]) -> Events:
        return Events(
            self.user[mask],
            self.item[mask],
            self.category[mask],
            self.behavior[mask],
            self.ts[mask],
        )

    @classmethod
    def from_columns(cls, user: I64, item: I64, category: I64, behavior: I8, ts: I64) -> Events:
        order = np.lexsort((ts, user))
        return cls(user[order], item[order], category[order], behavior[order], ts[order])


def load_events(dataset: str, path: Path | None = None) -> tuple[Events, RowAudit]:
    """All usable events of ``dataset`` (bad rows are counted in the audit, not raised)."""
    audit = RowAudit()
    rows = [
        (e.user_id, e.item_id, e.category_id, BEHAVIOR_CODES[e.behavior], e.ts)
        for e in read_dataset(dataset, path, audit)
    ]
    if not rows:
        raise TrainingDataError(f"{dataset}: no usable events ({audit.summary()})")
    table = np.asarray(rows, dtype=np.int64)
    events = Events.from_columns(
        table[:, 0], table[:, 1], table[:, 2], table[:, 3].astype(np.int8), table[:, 4]
    )
    return events, audit


def _local_midnight_ms(date: str, offset_hours: int) -> int:
    zone = timezone(timedelta(hours=offset_hours))
    local = datetime.fromisoformat(date).replace(tzinfo=zone)
    return int(local.astimezone(UTC).timestamp() * 1000)


def in_range(events: Events, profile: DatasetProfile) -> Events:
    """Drop events outside the profile's valid dates (the originals carry a few)."""
    keep = np.ones(len(events), dtype=bool)
    if profile.start:
        keep &= events.ts >= _local_midnight_ms(profile.start, profile.utc_offset_hours)
    if profile.end:
        end = _local_midnight_ms(profile.end, profile.utc_offset_hours) + DAY_MS
        keep &= events.ts < end
    return events.take(keep)


def holdout_start(events: Events, profile: DatasetProfile) -> int:
    """First ms of the held-out span: the last ``holdout_days`` local calendar days."""
    offset = profile.utc_offset_hours * 3600 * 1000
    last_local_day = (int(events.ts.max()) + offset) // DAY_MS
    return (last_local_day - profile.holdout_days + 1) * DAY_MS - offset


def split_by_time(events: Events, cutoff_ms: int) -> tuple[Events, Events]:
    """(events before ``cutoff_ms``, events at or after it)."""
    before = events.ts < cutoff_ms
    train, held_out = events.take(before), events.take(~before)
    if len(train) == 0 or len(held_out) == 0:
        raise TrainingDataError(
            f"split at {cutoff_ms} leaves {len(train)} train and {len(held_out)} held-out events"
        )
    return train, held_out
