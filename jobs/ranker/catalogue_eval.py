"""The whole catalogue for held-out requests: the served pipeline against the baselines.

Each replayed held-out request (after one event of a user) is asked for the item
of that user's next event. The served pipeline ranks its recall candidates by the
model, above every other catalogue item (ordered by train popularity): what it
does not recall it misses. The baselines rank every catalogue item for the same
click sequence (the fresh view at the request, ``jobs.ranker.retrieval``). A next
item the train split never saw cannot be placed in the catalogue and is a miss for
every method alike (``catalogue_metrics``), though the pipeline's stream-fed routes
do recall such items online (``make eval-online`` counts those).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from jobs.ranker.baselines import F64, CoVisitation, popularity_prior
from jobs.ranker.catalogue_metrics import Positions, positions, ranking_metrics
from jobs.ranker.list_rows import list_rows
from jobs.ranker.retrieval import covisited, popularity, recent_first
from jobs.ranker.samples import Catalog
from jobs.ranker.store_replay import ReplayedRequest
from schemas.ranking import FIRST_ID_INDEX, OOV_INDEX

_BATCH = 256
# Above any popularity prior (which stays below 1): recalled candidates come first.
_RECALLED = 10.0


def pipeline_scores(
    requests: Sequence[ReplayedRequest], scores: Sequence[Sequence[float]], prior: F64
) -> F64:
    """[rows, catalogue]: each request's candidates in its score order, then the prior."""
    out = np.tile(prior[FIRST_ID_INDEX:], (len(requests), 1))
    for row, (request, values) in enumerate(zip(requests, scores, strict=True)):
        indexes = request.model_input.cand_items.astype(np.int64)
        order = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
        rank_score = _RECALLED + np.linspace(1.0, 0.0, num=len(order), endpoint=False)
        placed = np.empty(len(order))
        placed[order] = rank_score
        known = indexes >= FIRST_ID_INDEX
        out[row, indexes[known] - FIRST_ID_INDEX] = placed[known]
    return out


def evaluate_catalogue(
    requests: Sequence[ReplayedRequest],
    scores: Sequence[Sequence[float]],
    catalog: Catalog,
    covisit: CoVisitation,
) -> dict[str, dict[str, float]]:
    """Whole-catalogue recall and NDCG at 10 and 50 of the pipeline and the baselines."""
    asked = [n for n, r in enumerate(requests) if r.next_item is not None]
    chosen = [requests[n] for n in asked]
    targets = catalog.vocab.item_index([r.next_item or 0 for r in chosen]).astype(np.int64)
    known = targets > OOV_INDEX
    rows = [chosen[n] for n in np.flatnonzero(known)]
    row_scores = [scores[asked[n]] for n in np.flatnonzero(known)]
    true_column = targets[known] - FIRST_ID_INDEX
    unseen = int((~known).sum())
    prior = popularity_prior(catalog)
    seq = list_rows(rows).seq_items if rows else np.zeros((0, 1), np.int32)
    methods: dict[str, Callable[[slice], F64]] = {
        "model": lambda b: pipeline_scores(rows[b], row_scores[b], prior),
        "popularity": lambda b: popularity(seq[b], prior),
        "recently clicked": lambda b: recent_first(seq[b], prior),
        "covisitation": lambda b: covisited(seq[b], covisit, prior),
    }
    result = {}
    for name, method in methods.items():
        started = time.perf_counter()
        parts = [Positions(np.zeros(0, np.int64), np.zeros(0, np.int64), unseen)]
        for lo in range(0, len(rows), _BATCH):
            batch = slice(lo, lo + _BATCH)
            parts.append(positions(method(batch), true_column[batch]))
        result[name] = {
            **ranking_metrics(Positions.concat(parts)),
            "seconds": time.perf_counter() - started,
        }
    return result
