"""The non-neural baseline on the same rows: LambdaMART (LightGBM) over the candidate
features alone, each request's list one query group."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jobs.ranker.list_rows import ListRows
from jobs.ranker.store_replay import ReplayedRequest


def train_lambdamart(rows: ListRows, seed: int, threads: int) -> object:
    import lightgbm  # the train extra's; imported here so serving never needs it

    model = lightgbm.LGBMRanker(
        objective="lambdarank",
        n_estimators=300,
        learning_rate=0.05,
        num_leaves=31,
        min_child_samples=20,
        subsample=0.8,
        subsample_freq=1,
        colsample_bytree=0.8,
        lambdarank_truncation_level=20,
        random_state=seed,
        n_jobs=threads,
        verbose=-1,
    )
    model.fit(rows.cand_dense[rows.mask], rows.labels[rows.mask], group=rows.mask.sum(axis=1))
    return model


def lambdamart_scores(model: object, requests: Sequence[ReplayedRequest]) -> list[list[float]]:
    predict = model.predict  # type: ignore[attr-defined]
    return [
        np.asarray(predict(r.model_input.cand_dense), dtype=np.float64).tolist()
        if r.candidates
        else []
        for r in requests
    ]
