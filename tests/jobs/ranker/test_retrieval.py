"""Whole-catalogue baselines on the 4-item history of test_baselines, orders by hand.

Train popularity: A 3, B 3, C 1, D 1. Co-visitation (users, 30 minutes): A-B 2,
A-C 1, B-C 1, C-D 1. Catalogue columns are A, B, C, D (item indexes 2..5).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from jobs.ranker.baselines import CoVisitation, popularity_prior
from jobs.ranker.retrieval import covisited, popularity, recent_first
from jobs.ranker.samples import Catalog
from tests.jobs.ranker.test_baselines import A, B, C, D, history

COLUMN = {A: 0, B: 1, C: 2, D: 3}


def _setup() -> tuple[Catalog, CoVisitation, npt.NDArray[np.float64]]:
    events = history()
    catalog = Catalog.from_train(events)
    return catalog, CoVisitation.from_train(events, catalog), popularity_prior(catalog)


def _seq(catalog: Catalog, *items: int) -> npt.NDArray[np.int32]:
    """One left-padded sequence, oldest first, as SampleBuilder makes it."""
    index = catalog.vocab.item_index(list(items)) if items else np.zeros(0, np.int32)
    return np.concatenate((np.zeros(5 - len(items), np.int32), index)).astype(np.int32)[None]


def test_popularity_ranks_every_row_alike_and_ties_equal_counts() -> None:
    *_, prior = _setup()
    scores = popularity(np.zeros((2, 5), np.int32), prior)
    assert scores.shape == (2, 4)  # padding and OOV are no catalogue columns
    assert scores[0, COLUMN[A]] == scores[0, COLUMN[B]] > scores[0, COLUMN[C]]
    assert scores[0, COLUMN[C]] == scores[0, COLUMN[D]]
    assert (scores < 1).all()


def test_recently_clicked_first_puts_the_latest_distinct_clicks_on_top() -> None:
    catalog, _, prior = _setup()
    # oldest first: C, then A, then C again: C is the latest, A next, then popularity
    scores = recent_first(_seq(catalog, C, A, C), prior)[0]
    order = np.argsort(-scores, kind="stable").tolist()
    assert order == [COLUMN[C], COLUMN[A], COLUMN[B], COLUMN[D]]
    # a padding or OOV entry is no click
    assert np.array_equal(recent_first(np.array([[0, 1, 0, 0, 0]], np.int32), prior)[0], prior[2:])


def test_covisitation_sums_counts_with_each_distinct_recent_click() -> None:
    catalog, covisit, prior = _setup()
    scores = covisited(_seq(catalog, A), covisit, prior)[0]
    assert np.floor(scores[[COLUMN[i] for i in (A, B, C, D)]]).tolist() == [0, 2, 1, 0]
    # A and D: B gets A-B 2, C gets A-C 1 + D-C 1; A and D nothing (50 minutes apart)
    both = covisited(_seq(catalog, A, D), covisit, prior)[0]
    assert np.floor(both[[COLUMN[i] for i in (A, B, C, D)]]).tolist() == [0, 2, 2, 0]
    # a repeated click is one click
    again = covisited(_seq(catalog, A, D, A, A), covisit, prior)[0]
    assert np.array_equal(again, both)
    # rows are independent; no click at all leaves the popularity fill
    batch = covisited(np.concatenate((_seq(catalog, A), _seq(catalog))), covisit, prior)
    assert np.array_equal(batch[0], scores)
    assert np.array_equal(batch[1], prior[2:])
