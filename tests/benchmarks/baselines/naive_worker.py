"""The naive worker, the end-to-end benchmark's baseline: one request at a time.

Same recall, model and post-processing as the worker, but the way a first version
is often written: poll one message, read features with Feast's
``get_online_features`` (three calls per request), score with one blocking
Triton call per request, produce, flush and commit per message. Not for
production; ``python -m tests.benchmarks.baselines.naive_worker`` takes the worker's settings plus
``STREAMREC_WORKER_FEAST_REPO`` (the feature repository to load).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from confluent_kafka import Consumer, Producer

from inference.worker.artifacts import ModelArtifacts
from inference.worker.features import TIMESTAMP, item_features, top_items, user_features
from inference.worker.inputs import UserInput, assemble
from inference.worker.postprocess import Scored, finalize
from inference.worker.recall import (
    EmbeddingIndex,
    merge_routes,
    recent_categories,
    trend_items,
    user_routes,
)
from inference.worker.settings import WorkerSettings, parse_args, settings_from
from jobs.feature_writer.feast_env import REPO_PATH, load_store
from runtime.consumer import CONSUMER_DEFAULTS
from schemas.codec import recommendation_codec, request_codec, wall_clock_ms
from schemas.errors import InvalidRecord
from schemas.ranking import CANDIDATE_FEATURES, INPUT_NAMES, ITEM_DENSE_FEATURES, SCORES
from schemas.records import Recommendation, RecRequest
from schemas.views import (
    CATEGORY_TRENDS,
    ITEM_TRENDS,
    USER_CLICK_WINDOW,
    USER_RECENT_CLICKS,
    ViewSpec,
)

logger = logging.getLogger("tests.benchmarks.baselines.naive_worker")


def feast_rows(store: Any, spec: ViewSpec, ids: Sequence[int]) -> list[dict[str, Any] | None]:
    """One ``get_online_features`` call; None where the entity has no row."""
    if not ids:
        return []
    response = store.get_online_features(
        features=[f"{spec.name}:{name}" for name in spec.feature_names],
        entity_rows=[{spec.join_key: i} for i in ids],
    ).to_dict()
    rows: list[dict[str, Any] | None] = []
    for n in range(len(ids)):
        row = {name: response[name][n] for name in spec.feature_names}
        present = any(v is not None for v in row.values())
        rows.append({**row, TIMESTAMP: 0} if present else None)
    return rows


class NaiveWorker:
    def __init__(self, settings: WorkerSettings, artifacts: ModelArtifacts, store: Any) -> None:
        import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]

        self.settings = settings
        self.artifacts = artifacts
        self.store = store
        self.index = EmbeddingIndex(artifacts.item_embeddings, artifacts.vocab.item_ids)
        self.grpc = grpcclient
        self.triton = grpcclient.InferenceServerClient(settings.triton_url)
        self.codec = request_codec()
        self.out_codec = recommendation_codec()

    def answer(self, request: RecRequest) -> Recommendation:
        s = self.settings
        recent = feast_rows(self.store, USER_RECENT_CLICKS, [request.user_id])[0]
        window = feast_rows(self.store, USER_CLICK_WINDOW, [request.user_id])[0]
        user = user_features(request.user_id, recent, window)
        clicks = self.artifacts.vocab.item_index(user.items)
        embedding = self.index.search([clicks], s.embedding_candidates)[0]
        categories = recent_categories(user.categories)
        tops = [top_items(r) for r in feast_rows(self.store, CATEGORY_TRENDS, categories)]
        popular = list(self.artifacts.popular_items[: s.popular_candidates])
        routes = user_routes(
            request.candidates, embedding, trend_items(tops, s.trend_candidates), popular
        )
        cands = merge_routes(routes, s.max_candidates, 2 * request.k)
        ids = [c.item_id for c in cands]
        items = [item_features(r) for r in feast_rows(self.store, ITEM_TRENDS, ids)]
        vocab = self.artifacts.vocab
        cand_items = vocab.item_index(ids)
        raw_cats = self.artifacts.category_of(cand_items).copy()
        for j, item in enumerate(items):
            raw_cats[j] = raw_cats[j] or item.category_id
        model_input = UserInput(
            seq_items=clicks, seq_cats=vocab.category_index(user.categories),
            user_dense=user.dense, cand_items=cand_items,
            cand_cats=vocab.category_index(raw_cats),
            cand_dense=_item_dense_only(items),
        )  # fmt: skip
        scores, version = self._score(assemble([model_input]))
        columns = zip(cands, scores[0][: len(ids)], raw_cats, strict=True)
        scored = [Scored(c.item_id, float(sc), c.route, int(cat)) for c, sc, cat in columns]
        return Recommendation(
            request_id=request.request_id, user_id=request.user_id,
            items=finalize(scored, request.k, user.excluded, (), s.max_per_category),
            model_version=version, features_at=None, produced_at=wall_clock_ms(),
        )  # fmt: skip

    def _score(self, inputs: dict[str, Any]) -> tuple[Any, str]:
        request = []
        for name in INPUT_NAMES:
            dtype = "INT32" if inputs[name].dtype == np.int32 else "FP32"
            tensor = self.grpc.InferInput(name, list(inputs[name].shape), dtype)
            tensor.set_data_from_numpy(inputs[name])
            request.append(tensor)
        result = self.triton.infer(self.settings.triton_model, request)
        return result.as_numpy(SCORES), f"{self.settings.triton_model}:naive"


def run(settings: WorkerSettings, worker: NaiveWorker) -> None:
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer(
        settings.kafka.client_config(**CONSUMER_DEFAULTS, **{"group.id": settings.group_id})
    )
    consumer.subscribe([settings.requests_topic])
    producer = Producer(settings.kafka.client_config(**{"acks": "all"}))
    try:
        while not stopping:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            try:
                request = worker.codec.decode(message.value() or b"")
            except InvalidRecord:
                consumer.commit(message=message, asynchronous=False)
                continue
            rec = worker.answer(request)
            producer.produce(settings.output_topic, worker.out_codec.encode(rec),
                             key=str(rec.user_id).encode())  # fmt: skip
            producer.flush(30)
            consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    settings = settings_from(args)
    repo = Path(os.environ.get("STREAMREC_WORKER_FEAST_REPO") or REPO_PATH)
    worker = NaiveWorker(settings, ModelArtifacts.load(settings.model_dir), load_store(repo))
    logger.info("naive worker consuming %s", settings.requests_topic)
    run(settings, worker)
    return 0


def _item_dense_only(items: Sequence[Any]) -> npt.NDArray[np.float32]:
    """The item windows, and zeros for the request-state features this naive worker does
    not compute: it measures the cost of the roundtrips, not the answers' quality."""
    dense = np.zeros((len(items), len(CANDIDATE_FEATURES)), np.float32)
    dense[:, : len(ITEM_DENSE_FEATURES)] = np.asarray([i.dense for i in items], np.float32).reshape(
        len(items), len(ITEM_DENSE_FEATURES)
    )
    return dense


if __name__ == "__main__":
    sys.exit(main())
