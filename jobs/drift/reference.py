"""The reference distribution: drift columns of the feature rows a dataset produces.

:func:`changelog_from_events` runs the pure-Python feature reference
(:mod:`schemas.reference`, which reproduces the Flink job's changelog
rows) over events and returns the rows in the order the job emits them: a
window when it closes, a fresh user row when its event arrives.

Which events make a sound reference: the traffic the served model sees, i.e.
the same population the drift job watches. The ranker's training run saves it
beside the model from the replayed Taobao stream (66k users, mostly one or two
events each in the two hours). The 9-day training file is not that population:
it holds the full histories of 294 heavy users, so its windows are longer and
more focused, and every check of live traffic against it would alert.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from jobs.drift.columns import COLUMN_NAMES, DriftRow, drift_rows
from jobs.drift.errors import ReferenceUnavailable
from schemas.features import FeatureUpdate, UserRecentEvents, UserWindow
from schemas.model_files import DRIFT_REFERENCE_FILE
from schemas.records import BehaviorEvent, Recommendation
from schemas.reference import (
    DEFAULT_SPEC,
    WindowSpec,
    category_windows,
    item_windows,
    user_recent,
    user_windows,
)

REFERENCE_FILE = DRIFT_REFERENCE_FILE


def default_window_spec() -> WindowSpec:
    """The feature job's own defaults, so the reference matches what it emits."""
    return DEFAULT_SPEC


def changelog_from_events(
    events: Sequence[BehaviorEvent], spec: WindowSpec | None = None
) -> list[FeatureUpdate]:
    """Every changelog row the feature job emits for ``events``, in emission order."""
    spec = spec or default_window_spec()
    items = item_windows(events, spec)
    rows: list[FeatureUpdate] = [
        *user_recent(events, spec),
        *user_windows(events, spec),
        *items,
        *category_windows(items, spec),
    ]
    return sorted(rows, key=_emission_key)


def _emission_key(row: FeatureUpdate) -> tuple[int, int]:
    """When the job emits ``row``, then a scrambled key order among rows emitted together.

    Flink emits a closing window's rows in key-group order, which has nothing to
    do with the rows' content. The reference functions build them in order of
    each key's first event instead, so users first seen late in a window (with
    the shortest sequences) would come last; a check over part of one window
    close would then see a biased slice.
    """
    if isinstance(row, UserRecentEvents):
        return row.latest_ts, 0
    entity = row.user_id if isinstance(row, UserWindow) else getattr(row, "item_id", None)
    entity = entity or row.category_id  # type: ignore[union-attr]
    return row.window_end, (int(entity) * _GOLDEN) & _MASK


_GOLDEN = 0x9E3779B97F4A7C15  # Fibonacci hashing: nearby ids land far apart
_MASK = 2**64 - 1


def drift_frame(rows: Iterable[DriftRow]) -> pd.DataFrame:
    """Drift rows as a table with every drift column, empty cells as missing values."""
    frame = pd.DataFrame.from_records(list(rows), columns=list(COLUMN_NAMES))
    return frame.astype("float64")


def reference_frame(
    events: Sequence[BehaviorEvent],
    recommendations: Iterable[Recommendation] = (),
    spec: WindowSpec | None = None,
) -> pd.DataFrame:
    """The reference table of ``events`` (and, when given, recommendations for scores)."""
    records: list[FeatureUpdate | Recommendation] = [*changelog_from_events(events, spec)]
    records.extend(recommendations)
    return drift_frame(drift_rows(records))


def save_reference(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return path


def load_reference(path: Path) -> pd.DataFrame:
    """The saved reference, with every drift column present (missing ones empty)."""
    if not path.exists():
        raise ReferenceUnavailable(
            f"no drift reference at {path}; build it with "
            f"`python -m jobs.drift reference --out {path}` (make train does this)"
        )
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise ReferenceUnavailable(f"drift reference {path} is unreadable: {exc}") from exc
    if not set(frame.columns) & set(COLUMN_NAMES):
        raise ReferenceUnavailable(f"drift reference {path} has none of the drift columns")
    return frame.reindex(columns=list(COLUMN_NAMES)).astype("float64")
