"""Popularity and co-visitation on sampled candidates, from a hand-made history."""

from __future__ import annotations

import dataclasses

import numpy as np

from jobs.ranker.baselines import CoVisitation, distinct_known, popularity_scores, window_pairs
from jobs.ranker.events import Events
from jobs.ranker.samples import Catalog, SampleBuilder

MIN = 60_000
T0 = 1_511_600_000_000
A, B, C, D = 10, 11, 12, 13


def history() -> Events:
    """User 1 clicks A, B, C, D at minutes 0, 10, 25, 50: one session (no 30-minute gap),
    but A-D and B-D are more than 30 minutes apart. User 2 clicks A, B twice each."""
    rows = [
        (1, A, T0),
        (1, B, T0 + 10 * MIN),
        (1, C, T0 + 25 * MIN),
        (1, D, T0 + 50 * MIN),
        (2, A, T0),
        (2, B, T0 + 5 * MIN),
        (2, A, T0 + 6 * MIN),
        (2, B, T0 + 7 * MIN),
    ]
    table = np.array(rows, dtype=np.int64)
    n = len(rows)
    return Events.from_columns(
        table[:, 0], table[:, 1], np.full(n, 1, np.int64), np.zeros(n, np.int8), table[:, 2]
    )


# Users who clicked both within 30 minutes: A-B both users (user 2's four A-B pairs
# count once), A-C, B-C and C-D user 1 only; A-D (50 min) and B-D (40 min) nobody.
COUNTS = {(A, B): 2, (A, C): 1, (B, C): 1, (C, D): 1, (A, D): 0, (B, D): 0}


def count(covisit: CoVisitation, catalog: Catalog, a: int, b: int) -> int:
    key = int(catalog.vocab.item_index([a])[0]) * covisit.num_items
    key += int(catalog.vocab.item_index([b])[0])
    found = int(np.searchsorted(covisit.keys, key))
    return int(covisit.counts[found]) if covisit.keys[found] == key else 0


def test_window_pairs_hold_same_user_clicks_at_most_30_minutes_apart_both_ways() -> None:
    events = history()
    pairs = {tuple(p) for p in window_pairs(events, events.item).tolist()}
    assert (1, A, D) not in pairs and (1, D, A) not in pairs  # same session, 50 minutes
    assert {(1, C, D), (1, D, C), (2, A, B), (2, B, A)} <= pairs
    assert not any(a == b for _, a, b in pairs)  # an item with itself is no pair


def test_covisitation_counts_users_not_event_pairs_and_is_symmetric() -> None:
    events = history()
    catalog = Catalog.from_train(events)
    covisit = CoVisitation.from_train(events, catalog)
    for (a, b), expected in COUNTS.items():
        assert count(covisit, catalog, a, b) == expected, (a, b)
        assert count(covisit, catalog, b, a) == expected, (b, a)


def test_sampled_candidates_score_covisitation_with_the_distinct_sequence() -> None:
    events = history()
    catalog = Catalog.from_train(events)
    covisit = CoVisitation.from_train(events, catalog)
    target = Events.from_columns(
        np.array([2]), np.array([C]), np.array([1]), np.zeros(1, np.int8), np.array([T0 + 8 * MIN])
    )
    built = SampleBuilder(events, catalog).build(target, 3, np.random.default_rng(0))
    # user 2's sequence before minute 8 is A, B, A, B: each counts once
    assert sorted(built.seq_items[0][built.seq_items[0] > 0].tolist()) == sorted(
        catalog.vocab.item_index([A, B, A, B]).tolist()
    )
    chosen = [C, D, A, B]  # every candidate really looked up
    cand = catalog.vocab.item_index(chosen)[None, :]
    samples = dataclasses.replace(built, cand_items=cand, cand_cats=np.ones_like(cand))
    scores = covisit.scores(samples, catalog)[0]
    # C: A-C 1 + B-C 1; D: 0; A: A-B 2 (A-A is no pair); B: B-A 2
    assert np.floor(scores).astype(int).tolist() == [2, 0, 2, 2]
    assert (scores - np.floor(scores) < 1).all()  # popularity only breaks ties


def test_distinct_known_keeps_one_vote_per_item_and_drops_padding_and_oov() -> None:
    seq = np.array([[0, 0, 1, 5, 3, 5, 5]], dtype=np.int32)
    assert sorted(distinct_known(seq)[0].tolist()) == [0, 0, 0, 0, 0, 3, 5]


def test_popularity_is_the_train_count_of_each_candidate() -> None:
    events = history()
    catalog = Catalog.from_train(events)
    target = events.take(np.arange(len(events)) == 1)
    samples = SampleBuilder(events, catalog).build(target, 2, np.random.default_rng(0))
    counts = {A: 3, B: 3, C: 1, D: 1}
    raw = catalog.vocab.item_ids[samples.cand_items[0] - 2]
    assert popularity_scores(catalog, samples)[0].tolist() == [counts[int(i)] for i in raw]
