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
from jobs.ranker.errors import EmptySplitError, TrainingDataError
from schemas.ranking import USER_DENSE_FEATURES

DAY_MS = 24 * 3600 * 1000
# Share of events the adaptive hold-out keeps for evaluation (at least; it cuts at a day).
DEFAULT_HOLDOUT_FRACTION = 0.1
# Behaviour codes index the count columns in the contract's order (pv, cart, fav, buy).
BEHAVIOR_CODES = {
    name.removesuffix("_count"): code for code, name in enumerate(USER_DENSE_FEATURES)
}

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]


@dataclass(frozen=True)
class DatasetProfile:
    """How a dataset is cut: its valid time range, calendar zone and held-out span.

    ``holdout_days`` fixes the held-out span; 0 (the default) adapts it to the
    data, so a file with another time span than the bundled one still splits:
    see :func:`holdout_start`.
    """

    utc_offset_hours: int = 0
    start: str | None = None  # first valid local date, inclusive
    end: str | None = None  # last valid local date, inclusive
    holdout_days: int = 0
    holdout_fraction: float = DEFAULT_HOLDOUT_FRACTION


PROFILES = {
    # Days are calendar days in China; a few rows carry timestamps outside the 9 days.
    # The adaptive hold-out is the last day on the 9-day file (a test holds it there).
    "taobao-9days": DatasetProfile(8, "2017-11-25", "2017-12-03"),
    "taobao": DatasetProfile(8, "2017-11-25", "2017-12-03"),
    # No fixed span: the bundled file covers 22 years, other MovieLens exports months.
    "movielens": DatasetProfile(0),
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


def _local_day(ts: int, offset_hours: int) -> int:
    """Number of the local calendar day holding ``ts`` (days since the epoch)."""
    return (ts + offset_hours * 3600 * 1000) // DAY_MS


def _day_start(day: int, offset_hours: int) -> int:
    return day * DAY_MS - offset_hours * 3600 * 1000


def holdout_start(events: Events, profile: DatasetProfile) -> int:
    """First ms of the held-out span.

    With ``holdout_days`` set: the last that many local calendar days. Otherwise
    the local day holding the first of the last ``holdout_fraction`` of events,
    so whole days are held out whatever span the file covers (the last day of
    the 9-day Taobao file, the last months of a 7-month MovieLens export). When
    that day is the data's first one (a file of a few hours) the cut falls at
    that event itself instead: whole days would leave nothing to train on.
    """
    offset = profile.utc_offset_hours
    if profile.holdout_days:
        last_day = _local_day(int(events.ts.max()), offset)
        return _day_start(last_day - profile.holdout_days + 1, offset)
    ordered = np.sort(events.ts)
    held = max(1, int(np.ceil(profile.holdout_fraction * len(ordered))))
    first_held = int(ordered[len(ordered) - held])
    day_cut = _day_start(_local_day(first_held, offset), offset)
    return day_cut if day_cut > int(ordered[0]) else first_held


def span_days(events: Events, profile: DatasetProfile) -> int:
    """How many local calendar days the events touch, first and last included."""
    offset = profile.utc_offset_hours
    return _local_day(int(events.ts.max()), offset) - _local_day(int(events.ts.min()), offset) + 1


def local_time(ms: int, offset_hours: int) -> str:
    zone = timezone(timedelta(hours=offset_hours))
    return datetime.fromtimestamp(ms / 1000, zone).strftime(f"%Y-%m-%d %H:%M UTC{offset_hours:+d}")


def describe_span(events: Events, profile: DatasetProfile) -> str:
    """The data's first and last local times and its length in calendar days."""
    offset = profile.utc_offset_hours
    return (
        f"{local_time(int(events.ts.min()), offset)} .. {local_time(int(events.ts.max()), offset)}"
        f" ({span_days(events, profile)} calendar days)"
    )


def split_by_time(events: Events, cutoff_ms: int) -> tuple[Events, Events]:
    """(events before ``cutoff_ms``, events at or after it); both must be non-empty."""
    before = events.ts < cutoff_ms
    train, held_out = events.take(before), events.take(~before)
    if len(train) == 0 or len(held_out) == 0:
        raise EmptySplitError(cutoff_ms, len(train), len(held_out))
    return train, held_out
