"""Rank the whole catalogue for held-out events: the model and the baselines.

The sampled protocol (true item + 99 negatives) needs a true item the train
split knows, so it skips the held-out events on new items; on the Taobao
9-day file that is three in four. Here every sampled held-out event counts:
each method scores every catalogue item for the event's click sequence (the
one serving would hold, as in the sampled rows), and an event on an unseen
item is a miss for all of them (``catalogue_metrics``). Seen items are not
removed from the ranking: Taobao users come back to items, and the
"recently clicked first" baseline measures exactly that.

The model costs 0.1-0.4 s per event on two shared cores (~19k items x a few
sequence positions), so the job ranks a seeded sample (``full_eval_rows``,
unseen items included); events on unseen items need no scoring at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jobs.ranker.baselines import F64, CoVisitation, popularity_prior
from jobs.ranker.catalogue_metrics import Positions, positions, ranking_metrics
from jobs.ranker.events import Events
from jobs.ranker.model import DIN
from jobs.ranker.retrieval import covisited, popularity, recent_first
from jobs.ranker.samples import Catalog, SampleBuilder, Samples
from jobs.ranker.training import catalogue_logits
from jobs.ranker.windows import WindowCounter, item_dense, latest_window_counts
from schemas.ranking import FIRST_ID_INDEX, OOV_INDEX

# rows of a baseline batch: [rows, catalogue] float64 stays near 40 MB at 19k items
_BATCH = 256


@dataclass(frozen=True)
class CatalogueRows:
    """Sampled held-out events: those on known items as rows, the others counted."""

    rows: Samples  # one candidate per row, the true item (an index >= FIRST_ID_INDEX)
    unseen: int  # sampled events on items the train split never saw
    item_windows: WindowCounter  # the model's item features at each event's time


def catalogue_rows(
    held_out: Events, builder: SampleBuilder, rng: np.random.Generator
) -> CatalogueRows:
    """The rows of held-out positives (a sample of them: see ``full_eval_rows``)."""
    known = builder.catalog.vocab.item_index(held_out.item) > OOV_INDEX
    rows = builder.build(held_out.take(known), 0, rng)  # no negatives: the catalogue is all
    return CatalogueRows(rows, int((~known).sum()), builder.item_windows)


def _batched(rows: CatalogueRows, scorer: Callable[[slice], F64]) -> Positions:
    samples = rows.rows
    true_column = samples.cand_items[:, 0].astype(np.int64) - FIRST_ID_INDEX
    parts = [Positions(np.zeros(0, np.int64), np.zeros(0, np.int64), rows.unseen)]
    for lo in range(0, len(samples), _BATCH):
        batch = slice(lo, lo + _BATCH)
        parts.append(positions(scorer(batch), true_column[batch]))
    return Positions.concat(parts)


def model_scorer(model: DIN, rows: CatalogueRows, catalog: Catalog) -> Callable[[slice], F64]:
    """Scores [batch, catalogue] of the model, one event at a time (see catalogue_logits)."""
    vocab, samples = catalog.vocab, rows.rows
    items = np.arange(FIRST_ID_INDEX, vocab.num_items, dtype=np.int32)
    cats = vocab.category_index(catalog.item_category[FIRST_ID_INDEX:])

    def one(row: int) -> F64:
        ts = np.full(len(items), samples.ts[row])
        dense = item_dense(latest_window_counts(rows.item_windows, vocab.item_ids, ts))
        logits = catalogue_logits(
            model,
            samples.seq_items[row],
            samples.seq_cats[row],
            samples.user_dense[row],
            items,
            cats,
            dense,
        )
        return logits.astype(np.float64)

    def scorer(batch: slice) -> F64:
        return np.stack([one(row) for row in range(len(samples))[batch]])

    return scorer


def evaluate_catalogue(
    rows: CatalogueRows, catalog: Catalog, covisit: CoVisitation, model: DIN
) -> dict[str, dict[str, float]]:
    """Whole-catalogue recall and NDCG at 10 and 50 of the model and the three baselines."""
    prior = popularity_prior(catalog)
    seq = rows.rows.seq_items
    scorers: dict[str, Callable[[slice], F64]] = {
        "model": model_scorer(model, rows, catalog),
        "popularity": lambda b: popularity(seq[b], prior),
        "recently clicked": lambda b: recent_first(seq[b], prior),
        "covisitation": lambda b: covisited(seq[b], covisit, prior),
    }
    result = {}
    for name, scorer in scorers.items():
        started = time.perf_counter()
        result[name] = {
            **ranking_metrics(_batched(rows, scorer)),
            "seconds": time.perf_counter() - started,
        }
    return result
