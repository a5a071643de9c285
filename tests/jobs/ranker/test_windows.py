"""Window counts match the feature job's reference windows and the contract's functions."""

from __future__ import annotations

import numpy as np

from jobs.ranker.events import BEHAVIOR_CODES, I8, I64
from jobs.ranker.windows import (
    WindowCounter,
    item_dense,
    last_window,
    latest_window_counts,
    user_dense,
)
from schemas.features import conversion
from schemas.ranking import item_dense_vector, user_dense_vector
from schemas.records import Behavior, BehaviorEvent
from schemas.reference import WindowSpec, item_windows, user_windows
from schemas.windows import SLIDE_MS, WINDOW_MS

BEHAVIORS: tuple[Behavior, ...] = ("pv", "cart", "fav", "buy")
T0 = 1_511_600_000_000 - 1_511_600_000_000 % SLIDE_MS


def _random_events(seed: int, count: int = 400) -> list[BehaviorEvent]:
    rng = np.random.default_rng(seed)
    return [
        BehaviorEvent(
            user_id=int(rng.integers(1, 6)),
            item_id=int(rng.integers(1, 9)),
            category_id=7,
            behavior=BEHAVIORS[int(rng.integers(0, 4))],
            ts=T0 + int(rng.integers(0, 3 * 3600 * 1000)),
        )
        for _ in range(count)
    ]


def _columns(events: list[BehaviorEvent], attr: str) -> tuple[I64, I64, I8]:
    return (
        np.array([getattr(e, attr) for e in events], dtype=np.int64),
        np.array([e.ts for e in events], dtype=np.int64),
        np.array([BEHAVIOR_CODES[e.behavior] for e in events], dtype=np.int8),
    )


def test_last_window_ends_at_the_last_slide_boundary_not_after_the_event() -> None:
    ts = np.array([T0, T0 + 1, T0 + SLIDE_MS - 1, T0 + SLIDE_MS], dtype=np.int64)
    start, end = last_window(ts)
    assert end.tolist() == [T0, T0, T0, T0 + SLIDE_MS]
    assert (end - start == WINDOW_MS).all()
    assert (end <= ts).all()


def test_user_counts_equal_the_reference_user_windows() -> None:
    events = _random_events(seed=1)
    spec = WindowSpec(WINDOW_MS, SLIDE_MS, sequence_length=50, top_items=10)
    reference = {(w.user_id, w.window_end): w for w in user_windows(events, spec)}
    counter = WindowCounter.build(*_columns(events, "user_id"))
    for (user, end), window in reference.items():
        got = counter.counts(np.array([user]), np.array([end - WINDOW_MS]), np.array([end]))
        assert got[0].tolist() == [window.pv, window.cart, window.fav, window.buy]


def test_item_counts_equal_the_reference_item_windows_and_unknown_items_count_zero() -> None:
    events = _random_events(seed=2)
    spec = WindowSpec(WINDOW_MS, SLIDE_MS, sequence_length=50, top_items=10)
    counter = WindowCounter.build(*_columns(events, "item_id"))
    for window in item_windows(events, spec):
        got = counter.counts(
            np.array([window.item_id]),
            np.array([window.window_start]),
            np.array([window.window_end]),
        )
        assert got[0].tolist() == [window.pv, window.cart, window.fav, window.buy]
    unknown = counter.counts(np.array([999]), np.array([T0]), np.array([T0 + WINDOW_MS]))
    assert unknown.tolist() == [[0, 0, 0, 0]]


def test_counts_never_include_the_event_at_the_query_time_or_later() -> None:
    events = [BehaviorEvent(1, 5, 7, "pv", T0 + 10 * 60_000 + s) for s in (0, 1, 2)]
    counter = WindowCounter.build(*_columns(events, "user_id"))
    query = np.array([T0 + 10 * 60_000 + 1], dtype=np.int64)
    start, end = last_window(query)
    assert counter.counts(np.array([1]), start, end).tolist() == [[0, 0, 0, 0]]
    later_start, later_end = last_window(query + SLIDE_MS)
    assert counter.counts(np.array([1]), later_start, later_end).tolist() == [[3, 0, 0, 0]]


def test_dense_vectors_by_hand_and_equal_to_the_contract_functions() -> None:
    counts = np.array([[0, 0, 0, 0], [7, 1, 2, 3], [0, 0, 0, 4]], dtype=np.int64)
    # log1p of each count (ln 8 = 2.0794415, ln 2, ln 3, ln 4, ln 5); conversion = buy / pv,
    # 0 when nothing was viewed.
    np.testing.assert_allclose(
        user_dense(counts),
        np.array(
            [[0, 0, 0, 0], [2.0794415, 0.6931472, 1.0986123, 1.3862944], [0, 0, 0, 1.6094379]]
        ),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        item_dense(counts),
        np.array([[0, 0, 0, 0, 0], [2.0794415, 0.6931472, 1.0986123, 1.3862944, 3 / 7],
                  [0, 0, 0, 1.6094379, 0]]),
        rtol=1e-6,
    )  # fmt: skip
    for row, users, items in zip(counts, user_dense(counts), item_dense(counts), strict=True):
        pv, cart, fav, buy = (int(c) for c in row)
        np.testing.assert_allclose(users, user_dense_vector(pv, cart, fav, buy), rtol=1e-6)
        expected = item_dense_vector(pv, cart, fav, buy, conversion(pv, buy))
        np.testing.assert_allclose(items, expected, rtol=1e-6)


def test_latest_window_is_the_newest_closed_reference_window_of_the_entity() -> None:
    """What the online store holds at ``t``: the last closed window the user was active in."""
    events = _random_events(seed=3, count=120)
    spec = WindowSpec(WINDOW_MS, SLIDE_MS, sequence_length=50, top_items=10)
    windows = user_windows(events, spec)
    counter = WindowCounter.build(*_columns(events, "user_id"))
    rng = np.random.default_rng(4)
    users = rng.integers(1, 7, 300).astype(np.int64)  # user 6 never appears
    times = (T0 + rng.integers(-3600_000, 5 * 3600_000, 300)).astype(np.int64)
    got = latest_window_counts(counter, users, times)
    for user, ts, counts in zip(users, times, got, strict=True):
        boundary = ts - ts % SLIDE_MS
        closed = [w for w in windows if w.user_id == user and w.window_end <= boundary]
        latest = max(closed, key=lambda w: w.window_end, default=None)
        expected = [latest.pv, latest.cart, latest.fav, latest.buy] if latest else [0, 0, 0, 0]
        assert counts.tolist() == expected
