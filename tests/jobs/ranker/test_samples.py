"""Sample construction: time split, no future in sequences or features, valid negatives."""

from __future__ import annotations

import numpy as np
import pytest

from jobs.ranker.errors import TrainingDataError
from jobs.ranker.events import (
    DAY_MS,
    DatasetProfile,
    Events,
    holdout_start,
    in_range,
    split_by_time,
)
from jobs.ranker.samples import (
    Catalog,
    SampleBuilder,
    sample_negatives,
    unique_positives,
)
from schemas.ranking import OOV_INDEX, PAD_INDEX, SEQ_LEN
from schemas.windows import HORIZON_MS, SLIDE_MS

# 2017-11-25 00:00 in UTC+8
DAY0 = 1_511_539_200_000


def _events(seed: int = 0, users: int = 8, items: int = 40, per_user: int = 120) -> Events:
    rng = np.random.default_rng(seed)
    n = users * per_user
    user = np.repeat(np.arange(1, users + 1), per_user).astype(np.int64)
    item = rng.integers(100, 100 + items, n).astype(np.int64)
    return Events.from_columns(
        user,
        item,
        (item % 5 + 1).astype(np.int64),
        rng.integers(0, 4, n).astype(np.int8),
        (DAY0 + rng.integers(0, 3 * DAY_MS, n)).astype(np.int64),
    )


def test_events_are_sorted_by_user_then_time() -> None:
    events = _events()
    key = events.user * 10**13 + events.ts
    assert (np.diff(key) >= 0).all()


def test_holdout_is_the_last_local_calendar_day_and_the_split_is_by_time() -> None:
    events = _events()
    profile = DatasetProfile(utc_offset_hours=8, holdout_days=1)
    cutoff = holdout_start(events, profile)
    assert cutoff == DAY0 + 2 * DAY_MS
    train, held_out = split_by_time(events, cutoff)
    assert train.ts.max() < cutoff <= held_out.ts.min()
    assert len(train) + len(held_out) == len(events)


def test_out_of_range_rows_are_dropped() -> None:
    events = _events()
    profile = DatasetProfile(utc_offset_hours=8, start="2017-11-25", end="2017-11-26")
    kept = in_range(events, profile)
    assert kept.ts.min() >= DAY0
    assert kept.ts.max() < DAY0 + 2 * DAY_MS
    assert len(kept) < len(events)


def test_a_split_with_an_empty_side_is_an_error() -> None:
    events = _events()
    with pytest.raises(TrainingDataError):
        split_by_time(events, int(events.ts.max()) + 1)


@pytest.mark.parametrize("horizon_ms", [0, HORIZON_MS])
def test_sequences_hold_only_strictly_earlier_events_of_the_same_user_oldest_first(
    horizon_ms: int,
) -> None:
    events = _events(per_user=400)
    train, held_out = split_by_time(events, DAY0 + 2 * DAY_MS)
    catalog = Catalog.from_train(train)
    builder = SampleBuilder(events, catalog, sequence_horizon_ms=horizon_ms)
    targets = unique_positives(held_out)
    samples = builder.build(targets, negatives=3, rng=np.random.default_rng(0))
    lengths = []
    for row in range(0, len(targets), 17):
        user, ts = targets.user[row], targets.ts[row]
        earlier = (events.user == user) & (events.ts < ts)
        if horizon_ms and earlier.any():
            # the fresh view: events up to 30 minutes before the user's last earlier one
            earlier &= events.ts > events.ts[earlier].max() - horizon_ms
        lengths.append(int(earlier.sum()))
        expected = catalog.vocab.item_index(events.item[earlier])[-SEQ_LEN:]
        got = samples.seq_items[row]
        assert got[got != PAD_INDEX].tolist() == expected[expected != PAD_INDEX].tolist()
        assert (got[: SEQ_LEN - len(expected)] == PAD_INDEX).all()
    assert max(lengths) >= SEQ_LEN if not horizon_ms else max(lengths) < SEQ_LEN


def _with_burst(events: Events, user: int, item: int, ts: int) -> Events:
    """``events`` plus a burst by ``user`` on ``item`` at ``ts`` and just after it."""
    extra = np.array([ts, ts, ts + 1, ts + SLIDE_MS // 2, ts + 3 * SLIDE_MS], dtype=np.int64)
    n = len(extra)
    return Events.from_columns(
        np.concatenate((events.user, np.full(n, user))),
        np.concatenate((events.item, np.full(n, item))),
        np.concatenate((events.category, np.full(n, 1))),
        np.concatenate((events.behavior, np.arange(n) % 4)).astype(np.int8),
        np.concatenate((events.ts, extra)),
    )


def test_dense_features_and_sequences_ignore_the_current_event_and_the_future() -> None:
    events = _events()
    catalog = Catalog.from_train(events)
    late = np.flatnonzero(events.ts >= DAY0 + DAY_MS)
    for row in late[::97]:
        target = events.take(np.arange(len(events)) == row)
        before = SampleBuilder(events, catalog).build(target, 3, np.random.default_rng(0))
        burst = _with_burst(events, int(target.user[0]), int(target.item[0]), int(target.ts[0]))
        after = SampleBuilder(burst, catalog).build(target, 3, np.random.default_rng(0))
        np.testing.assert_array_equal(before.seq_items, after.seq_items)
        np.testing.assert_array_equal(before.user_dense, after.user_dense)
        np.testing.assert_array_equal(before.cand_dense, after.cand_dense)


def test_negatives_never_equal_the_positive() -> None:
    events = _events(items=3)
    catalog = Catalog.from_train(events)
    positives = catalog.vocab.item_index(events.item).astype(np.int64)
    drawn = sample_negatives(catalog, positives, 20, np.random.default_rng(1))
    assert (drawn != positives[:, None]).all()
    assert drawn.min() >= 2  # never pad or OOV: only items the train split saw


def test_negatives_are_drawn_in_proportion_to_train_popularity() -> None:
    # Item 100 seen 60 times, 101 30 times, 102 10 times; every positive is item 103.
    items = np.array([100] * 60 + [101] * 30 + [102] * 10 + [103] * 5, dtype=np.int64)
    n = len(items)
    events = Events.from_columns(
        np.ones(n, np.int64), items, np.ones(n, np.int64), np.zeros(n, np.int8),
        DAY0 + np.arange(n, dtype=np.int64) * 1000,
    )  # fmt: skip
    catalog = Catalog.from_train(events)
    positives = catalog.vocab.item_index(np.full(2000, 103)).astype(np.int64)
    drawn = sample_negatives(catalog, positives, 5, np.random.default_rng(3))
    raw = catalog.vocab.item_ids[drawn - 2]
    share = {item: float((raw == item).mean()) for item in (100, 101, 102, 103)}
    assert share[103] == 0.0  # the positive itself is redrawn
    # 60:30:10 among the others, within sampling noise of 10,000 draws.
    assert share[100] == pytest.approx(0.6, abs=0.03)
    assert share[101] == pytest.approx(0.3, abs=0.03)
    assert share[102] == pytest.approx(0.1, abs=0.03)


def test_candidates_put_the_true_item_first_with_its_label() -> None:
    events = _events()
    train, held_out = split_by_time(events, DAY0 + 2 * DAY_MS)
    catalog = Catalog.from_train(train)
    targets = unique_positives(held_out)
    samples = SampleBuilder(events, catalog).build(targets, 5, np.random.default_rng(0))
    assert samples.cand_items.shape == (len(targets), 6)
    assert samples.cand_dense.shape == (len(targets), 6, 5)
    np.testing.assert_array_equal(samples.cand_items[:, 0], catalog.vocab.item_index(targets.item))
    assert samples.labels[:, 0].tolist() == [1.0] * len(targets)
    assert samples.labels[:, 1:].sum() == 0
    assert samples.seq_items.dtype == np.int32 and samples.cand_cats.dtype == np.int32
    assert (samples.cand_cats[:, 1:] != OOV_INDEX).all()


def test_no_targets_give_no_rows_of_the_same_widths() -> None:
    # A small whole-catalogue sample can hold only items the train split never saw.
    events = _events()
    train, held_out = split_by_time(events, DAY0 + 2 * DAY_MS)
    none = unique_positives(held_out).take(np.zeros(len(unique_positives(held_out)), bool))
    samples = SampleBuilder(events, Catalog.from_train(train)).build(
        none, 0, np.random.default_rng(0)
    )
    assert samples.cand_items.shape == (0, 1) and samples.cand_dense.shape == (0, 1, 5)


def test_popular_items_are_raw_ids_most_frequent_first() -> None:
    events = _events()
    catalog = Catalog.from_train(events)
    popular = catalog.popular_raw_items(5)
    counts = {int(i): int((events.item == i).sum()) for i in np.unique(events.item)}
    assert popular == sorted(counts, key=lambda i: (-counts[i], i))[:5]
