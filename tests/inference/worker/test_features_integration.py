"""The worker's batch reads return exactly what Feast's get_online_features returns."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from inference.worker.features import TIMESTAMP, FeatureReader
from inference.worker.inventory import inventory_key, mark
from runtime.online.redis_store import read_neighbours
from schemas.online.covisit import neighbours_key
from schemas.online.feast_format import field_hash, redis_key, ts_field
from schemas.online.feast_protos import ValueProto
from schemas.views import VIEWS
from tests.feature_repo.applied import AppliedRepo
from tests.inference.worker.world import World, changelog, plant_bytes, write_features

pytestmark = pytest.mark.integration


def feast_rows(repo: AppliedRepo, view: str, ids: list[int]) -> list[dict[str, Any] | None]:
    spec = VIEWS[view]
    response = repo.store.get_online_features(
        features=[f"{view}:{name}" for name in spec.feature_names],
        entity_rows=[{spec.join_key: entity_id} for entity_id in ids],
    ).to_dict()
    rows: list[dict[str, Any] | None] = []
    for i in range(len(ids)):
        row = {name: response[name][i] for name in spec.feature_names}
        rows.append(None if all(v is None for v in row.values()) else row)
    return rows


def without_time(rows: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
    return [None if r is None else {k: v for k, v in r.items() if k != TIMESTAMP} for r in rows]


@pytest.fixture(params=["one-redis", "redis-cluster"])
def any_repo(request: pytest.FixtureRequest) -> AppliedRepo:
    """The applied repository on one Redis and on a Redis Cluster."""
    name = "feast_cluster_repo" if request.param == "redis-cluster" else "feast_repo"
    repo: AppliedRepo = request.getfixturevalue(name)
    return repo


def test_batch_reads_equal_feast_get_online_features(any_repo: AppliedRepo, world: World) -> None:
    feast_repo = any_repo
    write_features(feast_repo.client, feast_repo.project, changelog(world.events))
    reader = FeatureReader(feast_repo.client, feast_repo.project, inventory_key(feast_repo.project))
    unknown = 2**40
    users = [*world.users[:300], unknown]
    items = [*sorted({e.item_id for e in world.events})[:300], unknown]
    categories = [*sorted({e.category_id for e in world.events})[:100], unknown]
    recent, window = reader.users(users)
    item_rows, _ = reader.items(items)
    category_rows = reader.categories(categories)
    assert without_time(recent) == feast_rows(feast_repo, "user_recent_clicks", users)
    assert without_time(window) == feast_rows(feast_repo, "user_click_window", users)
    assert without_time(item_rows) == feast_rows(feast_repo, "item_trends", items)
    assert without_time(category_rows) == feast_rows(feast_repo, "category_trends", categories)
    assert recent[-1] is None and sum(r is not None for r in recent) == 300


def test_the_routes_round_trip_reads_what_the_separate_reads_do(
    any_repo: AppliedRepo, world: World
) -> None:
    feast_repo = any_repo
    project = feast_repo.project + "routes"
    write_features(feast_repo.client, project, changelog(world.events))
    first, second, lonely = 101, 202, 303
    feast_repo.client.zadd(neighbours_key(first, project), {"7": 3.0, "8": 1.0, "9": 2.0})
    feast_repo.client.zadd(neighbours_key(second, project), {"7": 5.0})
    reader = FeatureReader(feast_repo.client, project, inventory_key(project))
    categories = [*sorted({e.category_id for e in world.events})[:50], 2**40]
    items = [first, second, lonely]

    rows, neighbours = reader.routes(categories, items, 2)

    assert rows == reader.categories(categories)
    assert neighbours == read_neighbours(feast_repo.client, items, 2, project)
    assert neighbours == [[(7, 3.0), (9, 2.0)], [(7, 5.0)], []]
    assert sum(r is not None for r in rows) == 50
    # No co-visit depth: the trend rows alone, and an empty list per item.
    assert reader.routes(categories, items, 0) == (rows, [[], [], []])
    assert reader.routes([], [], 2) == ([], [])


def test_inventory_set_marks_items_out_of_stock(any_repo: AppliedRepo) -> None:
    feast_repo = any_repo
    project = feast_repo.project + "inv"
    reader = FeatureReader(feast_repo.client, project, inventory_key(project))
    mark(feast_repo.client, out_of_stock=[11, 12], project=project)
    mark(feast_repo.client, back_in_stock=[12], project=project)
    _, stock = reader.items([10, 11, 12])
    assert stock == [False, True, False]
    assert reader.items([]) == ([], [])


def test_foreign_bytes_in_a_row_read_as_absent_and_are_reported(
    feast_repo: AppliedRepo, world: World
) -> None:
    write_features(feast_repo.client, feast_repo.project, changelog(world.events))
    unreadable: list[tuple[str, Exception]] = []
    reader = FeatureReader(
        feast_repo.client,
        feast_repo.project,
        inventory_key(feast_repo.project),
        on_unreadable=lambda view, error: unreadable.append((view, error)),
    )
    users = world.users[:3]
    items = sorted({e.item_id for e in world.events})[:3]
    recent = VIEWS["user_recent_clicks"]
    trends = VIEWS["item_trends"]
    client, project = feast_repo.client, feast_repo.project
    # Not protobuf at all, in a user's sequence field.
    plant_bytes(
        client,
        redis_key(recent.join_key, users[0], project),
        field_hash(recent.name, "item_ids"),
        b"\xff\xfe not a Value",
    )
    # A well-formed Value of the wrong kind (a string where an int64 count belongs).
    plant_bytes(
        client,
        redis_key(trends.join_key, items[1], project),
        field_hash(trends.name, "pv"),
        ValueProto(string_val="seven").SerializeToString(),
    )
    # A stored event time that is not a Timestamp.
    plant_bytes(
        client, redis_key(recent.join_key, users[2], project), ts_field(recent.name), b"\x08"
    )

    recent_rows, _ = reader.users(users)
    item_rows, _ = reader.items(items)

    assert recent_rows[0] is None and recent_rows[2] is None and recent_rows[1] is not None
    assert item_rows[1] is None and item_rows[0] is not None and item_rows[2] is not None
    assert sorted(view for view, _ in unreadable) == [
        "item_trends", "user_recent_clicks", "user_recent_clicks",
    ]  # fmt: skip


def test_a_batchs_reads_leave_no_cyclic_garbage(any_repo: AppliedRepo, world: World) -> None:
    # Each batch's reads, its pipeline and its replies were a reference cycle that only the
    # cyclic collector freed: in the worker, collections of thousands of such cycles held the
    # GIL for up to 83 ms (inference/worker/heap.py keeps that collector rare).
    feast_repo = any_repo
    write_features(feast_repo.client, feast_repo.project, changelog(world.events))
    reader = FeatureReader(feast_repo.client, feast_repo.project, inventory_key(feast_repo.project))
    users = world.users[:50]
    items = sorted({e.item_id for e in world.events})[:100]
    categories = sorted({e.category_id for e in world.events})[:20]

    def batch() -> None:
        reader.users(users)
        reader.routes(categories, items, 3)
        reader.items(items)

    batch()  # connections and caches made once are not the batch's
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            batch()
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert unreachable == 0
