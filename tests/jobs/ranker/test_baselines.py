"""Popularity and co-visitation baselines on a hand-made history."""

from __future__ import annotations

import dataclasses

import numpy as np

from jobs.ranker.baselines import CoVisitation, popularity_scores, session_ids
from jobs.ranker.events import Events
from jobs.ranker.samples import Catalog, SampleBuilder

MIN = 60_000
T0 = 1_511_600_000_000


def _history() -> Events:
    # user 1: session {10, 11}, then 2 hours later {12}; user 2: session {10, 11, 13}
    rows = [
        (1, 10, T0),
        (1, 11, T0 + 5 * MIN),
        (1, 12, T0 + 125 * MIN),
        (2, 10, T0),
        (2, 11, T0 + MIN),
        (2, 13, T0 + 2 * MIN),
        (2, 10, T0 + 3 * MIN),
    ]
    table = np.array(rows, dtype=np.int64)
    n = len(rows)
    return Events.from_columns(
        table[:, 0], table[:, 1], np.full(n, 1, np.int64), np.zeros(n, np.int8), table[:, 2]
    )


def test_sessions_break_on_a_new_user_or_a_30_minute_gap() -> None:
    assert session_ids(_history()).tolist() == [1, 1, 2, 3, 3, 3, 3]


def test_covisitation_sums_session_co_occurrences_with_the_sequence() -> None:
    history = _history()
    catalog = Catalog.from_train(history)
    covisit = CoVisitation.from_train(history, catalog)
    target = Events.from_columns(
        np.array([1]), np.array([11]), np.array([1]), np.zeros(1, np.int8), np.array([T0 + MIN])
    )
    built = SampleBuilder(history, catalog).build(target, 3, np.random.default_rng(0))
    # Score chosen candidates, so every case below is really looked up (a check
    # that read a missing item through .get(default) could not fail).
    chosen = [11, 13, 12, 10]
    cand = catalog.vocab.item_index(chosen)[None, :]
    samples = dataclasses.replace(built, cand_items=cand, cand_cats=np.ones_like(cand))
    # the sequence is [10]; 11 shared two sessions with 10, 13 one, 12 none (10 is itself)
    scores = covisit.scores(samples, catalog)[0]
    assert np.floor(scores).astype(int).tolist() == [2, 1, 0, 0]
    assert (scores - np.floor(scores) < 1).all()  # popularity only breaks ties


def test_popularity_is_the_train_count_of_each_candidate() -> None:
    history = _history()
    catalog = Catalog.from_train(history)
    target = history.take(np.arange(len(history)) == 1)
    samples = SampleBuilder(history, catalog).build(target, 2, np.random.default_rng(0))
    counts = {10: 3, 11: 2, 12: 1, 13: 1}
    raw = catalog.vocab.item_ids[samples.cand_items[0] - 2]
    assert popularity_scores(catalog, samples)[0].tolist() == [counts[int(i)] for i in raw]
