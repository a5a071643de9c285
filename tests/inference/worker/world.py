"""A small real world for worker tests and the end-to-end benchmark.

Real Taobao stream events moved to the present, written to Redis through the
feature writer's path (changelog records → ``to_rows`` → ``OnlineStoreWriter``),
worker artifacts for the items they touch, and an untrained ranker exported to
ONNX whose tables cover that vocabulary.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from inference.worker.artifacts import ModelArtifacts
from jobs.datasets import RowAudit, read_dataset
from jobs.feature_writer.rows import ConversionOptions, to_rows
from runtime.online.connect import OnlineClient
from runtime.online.redis_store import OnlineStoreWriter
from schemas.codec import wall_clock_ms
from schemas.features import (
    TREND_WEIGHTS,
    CategoryWindow,
    FeatureUpdate,
    ItemWindow,
    UserRecentEvents,
    UserWindow,
    pack_event,
    pack_trend,
)
from schemas.records import BehaviorEvent, RecRequest
from tests.support import requirements
from tests.support.artifacts import write_random_artifacts

HOUR_MS = 3_600_000


def stream_events(limit: int) -> list[BehaviorEvent]:
    """The first ``limit`` events of the Taobao stream, moved to end one minute ago."""
    path = requirements.dataset("taobao")
    events = list(itertools.islice(read_dataset("taobao", path, RowAudit()), limit))
    shift = wall_clock_ms() - 60_000 - max(e.ts for e in events)
    return [
        BehaviorEvent(e.user_id, e.item_id, e.category_id, e.behavior, e.ts + shift) for e in events
    ]


def changelog(events: Sequence[BehaviorEvent], top_per_category: int = 20) -> list[FeatureUpdate]:
    """Fresh sequences and windows of every user, item and category in ``events``."""
    by_user: dict[int, list[BehaviorEvent]] = defaultdict(list)
    by_item: dict[int, list[BehaviorEvent]] = defaultdict(list)
    for e in events:
        by_user[e.user_id].append(e)
        by_item[e.item_id].append(e)
    end = max(e.ts for e in events) + 1
    start = end - 3 * HOUR_MS
    updates: list[FeatureUpdate] = []
    for user, evs in by_user.items():
        packed = [pack_event(e.ts, e.item_id, e.category_id, e.behavior) for e in evs]
        counts = Counter(e.behavior for e in evs)
        updates.append(UserRecentEvents(user, max(e.ts for e in evs), packed))
        updates.append(
            UserWindow(user, start, end, packed, counts["pv"], counts["cart"],
                       counts["fav"], counts["buy"])
        )  # fmt: skip
    trends: dict[int, list[tuple[int, int]]] = defaultdict(list)
    category_counts: dict[int, Counter[str]] = defaultdict(Counter)
    for item, evs in by_item.items():
        counts = Counter(e.behavior for e in evs)
        category = evs[0].category_id
        updates.append(
            ItemWindow(item, category, start, end, counts["pv"], counts["cart"],
                       counts["fav"], counts["buy"])
        )  # fmt: skip
        trends[category].append((sum(TREND_WEIGHTS[b] * n for b, n in counts.items()), item))
        category_counts[category].update(counts)
    for category, scored in trends.items():
        top = sorted(scored, reverse=True)[:top_per_category]
        total = category_counts[category]
        updates.append(
            CategoryWindow(category, start, end, total["pv"], total["cart"], total["fav"],
                           total["buy"], [pack_trend(s, i) for s, i in top])
        )  # fmt: skip
    return updates


def write_features(client: OnlineClient, project: str, updates: Sequence[FeatureUpdate]) -> int:
    """Through the feature writer's own conversion and Redis writer."""
    rows = to_rows(updates, ConversionOptions(horizon_ms=3 * HOUR_MS))
    return OnlineStoreWriter(client, project).write(rows).written


@dataclass(frozen=True)
class World:
    events: list[BehaviorEvent]
    model_dir: Path
    artifacts: ModelArtifacts

    @property
    def users(self) -> list[int]:
        return sorted({e.user_id for e in self.events})

    def bought(self) -> dict[int, set[int]]:
        out: dict[int, set[int]] = defaultdict(set)
        for e in self.events:
            if e.behavior == "buy":
                out[e.user_id].add(e.item_id)
        return out


def build_world(
    model_dir: Path, events: Sequence[BehaviorEvent], max_items: int = 998, max_cats: int = 48
) -> World:
    """Artifacts for the most frequent items (at most ``max_items``) and an ONNX ranker."""
    from jobs.ranker.artifacts import write_torch_model
    from jobs.ranker.export import export_onnx, random_model

    item_counts = Counter(e.item_id for e in events)
    category_of = {e.item_id: e.category_id for e in events}
    cat_counts = Counter(e.category_id for e in events)
    kept_cats = {c for c, _ in cat_counts.most_common(max_cats)}
    items = [i for i, _ in item_counts.most_common() if category_of[i] in kept_cats][:max_items]
    artifacts = write_random_artifacts(
        model_dir, {i: category_of[i] for i in items}, popular=items[:200], dim=32
    )
    model = random_model(
        num_items=artifacts.vocab.num_items, num_categories=artifacts.vocab.num_categories, dim=32
    )
    export_onnx(model, model_dir / "model.onnx")
    write_torch_model(model_dir, model)  # what ranker_torch serves, published with the rest
    manifest = {"served_variant": "fp32", "served_file": "model.onnx", "seq_len": 50,
                "created_at": "test"}  # fmt: skip
    (model_dir / "manifest.json").write_text(json.dumps(manifest))
    return World(list(events), model_dir, artifacts)


def requests_for(users: Sequence[int], prefix: str, k: int = 10) -> Iterator[RecRequest]:
    now = wall_clock_ms()
    for n, user in enumerate(users):
        yield RecRequest(request_id=f"{prefix}-{n}", user_id=user, ts=now, k=k)


def plant_bytes(client: OnlineClient, key: bytes, field: bytes, value: bytes) -> None:
    """Store raw bytes in a hash field, as a foreign writer would (the stubs admit only str)."""
    client.hset(key, field, value)  # type: ignore[arg-type]
