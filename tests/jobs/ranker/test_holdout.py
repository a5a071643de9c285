"""The default hold-out adapts to the data's span; a setting that does not fit says why."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from jobs.ranker.__main__ import main
from jobs.ranker.errors import TrainingDataError
from jobs.ranker.events import DAY_MS, DatasetProfile, Events, holdout_start
from jobs.ranker.job import build_split
from jobs.ranker.settings import TrainSettings

DAY0 = 1_514_764_800_000  # 2018-01-01 00:00 UTC


def _events(ts: list[int]) -> Events:
    n = len(ts)
    return Events.from_columns(
        np.ones(n, np.int64),
        np.arange(n, dtype=np.int64),
        np.ones(n, np.int64),
        np.zeros(n, np.int8),
        np.array(ts, dtype=np.int64),
    )


def test_default_holds_out_the_days_of_the_last_tenth_of_events() -> None:
    # 10 days of 10 events, then 5 more on day 10: the last 11 of 105 start on day 9
    ts = [DAY0 + d * DAY_MS + i * 60_000 for d in range(10) for i in range(10)]
    ts += [DAY0 + 9 * DAY_MS + 3_600_000 + i for i in range(5)]
    assert holdout_start(_events(ts), DatasetProfile()) == DAY0 + 9 * DAY_MS
    # an explicit span wins; the zone moves the day boundary
    assert holdout_start(_events(ts), DatasetProfile(holdout_days=3)) == DAY0 + 7 * DAY_MS
    eight = DatasetProfile(utc_offset_hours=8)
    assert holdout_start(_events(ts), eight) == DAY0 + 9 * DAY_MS - 8 * 3_600_000


def test_data_within_one_day_is_cut_at_the_event_itself() -> None:
    ts = [DAY0 + 9 * 3_600_000 + i * 60_000 for i in range(100)]  # 100 minutes
    cutoff = holdout_start(_events(ts), DatasetProfile())
    assert cutoff == ts[90]  # the first of the last 10 events


def _movielens_folder(folder: Path, months: int = 7, sessions: bool = True) -> Path:
    """A MovieLens-format folder: 40 users rating 60 movies over ``months`` months, in
    sessions of ten ratings a minute apart (as people rate), or at random times."""
    rng = np.random.default_rng(3)
    folder.mkdir()
    with (folder / "movies.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["movieId", "title", "genres"])
        writer.writerows([m, f"Movie {m} (2000)", "Drama|Comedy"] for m in range(1, 61))
    start = int(datetime(2018, 1, 1, tzinfo=UTC).timestamp())
    span = months * 30 * 86_400
    with (folder / "ratings.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["userId", "movieId", "rating", "timestamp"])
        for user in range(1, 41):
            at = start
            for n, movie in enumerate(rng.choice(60, size=30, replace=False) + 1):
                rating = rng.choice([3.0, 4.0, 4.5, 5.0])
                if sessions and n % 10:
                    at += 60
                else:
                    at = start + int(rng.integers(0, span))
                writer.writerow([user, movie, rating, at])
    return folder


def test_a_seven_month_movielens_folder_splits_and_trains_with_defaults(tmp_path: Path) -> None:
    folder = _movielens_folder(tmp_path / "ml-7-months")
    split = build_split(TrainSettings(dataset="movielens", file=folder), report=lambda _: None)
    info = split.info
    assert info["train_events"] > 0 and info["held_out_events"] > 0
    assert 0.1 <= info["held_out_events"] / info["events"] < 0.15  # whole days of ~10%
    out = tmp_path / "model"
    argv = ["--dataset", "movielens", "--file", str(folder), "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main([*argv, "--epochs", "1", "--dim", "8"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["split"]["cutoff_ms"] == info["cutoff_ms"]
    assert printed.getvalue().strip().splitlines()[-1].startswith("RESULT hit_at_10=")


def test_ratings_with_no_next_item_within_the_horizon_are_too_sparse_and_say_so(
    tmp_path: Path,
) -> None:
    folder = _movielens_folder(tmp_path / "ml-scattered", sessions=False)
    with pytest.raises(TrainingDataError, match="too small or too sparse to train on"):
        build_split(TrainSettings(dataset="movielens", file=folder), report=lambda _: None)


def test_an_explicit_holdout_longer_than_the_data_says_its_span_and_what_to_set(
    tmp_path: Path,
) -> None:
    folder = _movielens_folder(tmp_path / "ml-7-months", sessions=False)
    settings = TrainSettings(dataset="movielens", file=folder, holdout_days=365)
    with pytest.raises(TrainingDataError) as raised:
        build_split(settings, report=lambda _: None)
    message = str(raised.value)
    assert "leaves 0 train and" in message
    assert "2018-01-01" in message and "calendar days" in message  # the span
    assert "--holdout-days 365" in message and "STREAMREC_TRAIN_HOLDOUT_DAYS" in message
    assert "or 0 to hold out" in message
