"""Whole-catalogue evaluation: the model's scores, the sampled rows, every method's metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jobs.ranker.baselines import CoVisitation
from jobs.ranker.catalogue_eval import catalogue_rows, evaluate_catalogue
from jobs.ranker.events import DAY_MS, Events, split_by_time
from jobs.ranker.model import DIN, DINConfig
from jobs.ranker.samples import Catalog, SampleBuilder, unique_positives
from jobs.ranker.training import catalogue_logits
from schemas.ranking import SEQ_LEN

DAY0 = 1_511_539_200_000


def _events() -> Events:
    """3 days of 8 users; on the last day some clicks go to items never seen before."""
    rng = np.random.default_rng(1)
    n = 900
    ts = DAY0 + rng.integers(0, 3 * DAY_MS, n)
    item = rng.integers(100, 140, n)
    new = (ts >= DAY0 + 2 * DAY_MS) & (rng.random(n) < 0.3)
    item = np.where(new, 1000 + np.arange(n), item)  # each a new item
    return Events.from_columns(
        rng.integers(1, 9, n).astype(np.int64),
        item.astype(np.int64),
        (item % 5 + 1).astype(np.int64),
        np.zeros(n, np.int8),
        ts.astype(np.int64),
    )


def test_trimmed_padding_gives_the_full_sequence_scores() -> None:
    torch.manual_seed(0)
    model = DIN(DINConfig(num_items=30, num_categories=6, dim=8)).eval()
    rng = np.random.default_rng(0)
    seq = np.zeros(SEQ_LEN, np.int32)
    seq[-4:] = rng.integers(2, 30, 4)
    cats = np.where(seq > 0, 3, 0).astype(np.int32)
    user = rng.random(4).astype(np.float32)
    items = np.arange(2, 30, dtype=np.int32)
    item_cats = (items % 5 + 1).astype(np.int32)
    dense = rng.random((len(items), 5)).astype(np.float32)
    trimmed = catalogue_logits(model, seq, cats, user, items, item_cats, dense)
    inputs = (seq, cats, user, items, item_cats, dense)
    with torch.no_grad():
        padded = model.logits(*(torch.from_numpy(a)[None] for a in inputs))[0].numpy()
    np.testing.assert_allclose(trimmed, padded, rtol=1e-5, atol=1e-6)
    # no history at all still scores (one masked slot)
    empty = np.zeros(SEQ_LEN, np.int32)
    assert np.isfinite(catalogue_logits(model, empty, empty, user, items, item_cats, dense)).all()


def test_every_method_ranks_the_same_rows_and_unseen_items_are_misses() -> None:
    events = _events()
    train, held_out = split_by_time(events, DAY0 + 2 * DAY_MS)
    catalog = Catalog.from_train(train)
    positives = unique_positives(held_out)
    rows = catalogue_rows(positives, SampleBuilder(events, catalog), np.random.default_rng(0))
    unseen = int((catalog.vocab.item_index(positives.item) < 2).sum())
    assert rows.unseen == unseen > 0
    assert len(rows.rows) + rows.unseen == len(positives)
    model = DIN(DINConfig(catalog.vocab.num_items, catalog.vocab.num_categories, dim=8))
    result = evaluate_catalogue(rows, catalog, CoVisitation.from_train(train, catalog), model)
    assert list(result) == ["model", "popularity", "recently clicked", "covisitation"]
    ceiling = 1 - unseen / len(positives)
    for metrics in result.values():
        assert 0 <= metrics["recall_at_10"] <= metrics["recall_at_50"] <= ceiling + 1e-12
        assert 0 <= metrics["ndcg_at_10"] <= metrics["ndcg_at_50"] <= ceiling + 1e-12
    # 40 known items: all of them are in the top 50, so every seen event is a hit
    assert result["popularity"]["recall_at_50"] == pytest.approx(ceiling)
