"""Rows written here read back through Feast, and rows Feast writes read back here."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

from jobs.feature_writer.rows import ConversionOptions, to_row
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from schemas.features import FeatureUpdate
from schemas.online.feast_format import FeatureRow, layout
from schemas.views import VIEWS
from tests.feature_repo.applied import AppliedRepo
from tests.jobs.feature_writer.samples import T0, category_window, item_window, recent, user_window

pytestmark = pytest.mark.integration
_ids = itertools.count(1_000_000)


def fresh_id() -> int:
    return next(_ids)


def feast_read(repo: AppliedRepo, view: str, ids: list[int]) -> list[dict[str, Any] | None]:
    """get_online_features for every feature of ``view``; None where all are missing."""
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


def sample_rows() -> list[FeatureRow]:
    options = ConversionOptions()
    updates: list[FeatureUpdate] = [
        recent(user_id=fresh_id(), n=5),
        user_window(user_id=fresh_id()),
        item_window(item_id=fresh_id()),
        category_window(category_id=fresh_id()),
    ]
    return [to_row(update, options) for update in updates]


@pytest.fixture(params=["one-redis", "redis-cluster"])
def any_repo(request: pytest.FixtureRequest) -> AppliedRepo:
    """The applied repository on each kind of store Feast and the writer both support."""
    name = "feast_cluster_repo" if request.param == "redis-cluster" else "feast_repo"
    repo: AppliedRepo = request.getfixturevalue(name)
    return repo


def test_rows_written_here_read_back_through_feast(any_repo: AppliedRepo) -> None:
    feast_repo = any_repo
    writer = OnlineStoreWriter(feast_repo.client, feast_repo.project)
    rows = sample_rows()
    assert writer.write(rows).written == 4
    for row in rows:
        missing = fresh_id()
        got = feast_read(feast_repo, row.view.name, [row.entity_id, missing])
        assert got == [row.decoded(), None]


def test_both_user_views_share_one_hash_without_clobbering(feast_repo: AppliedRepo) -> None:
    user_id = fresh_id()
    options = ConversionOptions()
    writer = OnlineStoreWriter(feast_repo.client, feast_repo.project)
    fresh = to_row(recent(user_id=user_id, n=3), options)
    window = to_row(user_window(user_id=user_id), options)
    writer.write([fresh])
    writer.write([window])
    assert feast_read(feast_repo, "user_recent_clicks", [user_id]) == [fresh.values]
    assert feast_read(feast_repo, "user_click_window", [user_id]) == [window.values]


def feast_frame(row: FeatureRow) -> pd.DataFrame:
    # Whole milliseconds: Feast goes through a datetime, which holds microseconds.
    stamp = datetime.fromtimestamp(row.event_ns // 1_000_000 / 1000, tz=UTC)
    return pd.DataFrame(
        [{row.view.join_key: row.entity_id, **row.decoded(), "event_timestamp": stamp}]
    )


@pytest.mark.parametrize("how", ["write_to_online_store", "push"])
def test_rows_feast_writes_read_back_here(any_repo: AppliedRepo, how: str) -> None:
    feast_repo = any_repo
    for row in sample_rows():
        if how == "push":
            feast_repo.store.push(f"{row.view.name}_push", feast_frame(row))
        else:
            feast_repo.store.write_to_online_store(row.view.name, feast_frame(row))
        missing = fresh_id()
        got = read_rows(
            feast_repo.client,
            row.view.name,
            [row.entity_id, missing],
            project=feast_repo.project,
            timestamp_field="_event_ms",
        )
        assert got == [{**row.decoded(), "_event_ms": row.event_ns // 1_000_000}, None]


def test_reader_subset_of_features_in_requested_order(feast_repo: AppliedRepo) -> None:
    row = sample_rows()[2]
    OnlineStoreWriter(feast_repo.client, feast_repo.project).write([row])
    got = read_rows(
        feast_repo.client, "item_trends", [row.entity_id], ["buy", "pv"], project=feast_repo.project
    )
    assert got == [{"buy": row.decoded()["buy"], "pv": row.decoded()["pv"]}]


# Event times of successive writes to one entity: newer, older, equal, newer again.
SEQUENCE = [T0, T0 - 1000, T0, T0 - 1, T0 + 1, T0 + 1]


def item_row(entity_id: int, event_ms: int, marker: int) -> FeatureRow:
    update = item_window(item_id=entity_id, window_end=event_ms, pv=marker)
    return to_row(update, ConversionOptions())


def test_stale_and_equal_times_are_skipped_exactly_like_feast(feast_repo: AppliedRepo) -> None:
    ours, theirs = fresh_id(), fresh_id()
    writer = OnlineStoreWriter(feast_repo.client, feast_repo.project)
    outcomes = []
    for marker, event_ms in enumerate(SEQUENCE, start=1):
        feast_repo.store.write_to_online_store(
            "item_trends", feast_frame(item_row(theirs, event_ms, marker))
        )
        result = writer.write([item_row(ours, event_ms, marker)])
        [mine] = read_rows(
            feast_repo.client, "item_trends", [ours], ["pv"], project=feast_repo.project
        )
        [feasts] = read_rows(
            feast_repo.client, "item_trends", [theirs], ["pv"], project=feast_repo.project
        )
        assert mine == feasts
        outcomes.append(result.written)
    assert outcomes == [1, 0, 0, 0, 1, 0]


def test_older_row_never_replaces_what_feast_wrote(feast_repo: AppliedRepo) -> None:
    entity = fresh_id()
    feast_repo.store.write_to_online_store("item_trends", feast_frame(item_row(entity, T0, 1)))
    writer = OnlineStoreWriter(feast_repo.client, feast_repo.project)
    assert writer.write([item_row(entity, T0 - 60_000, 2)]).skipped_stale == 1
    assert feast_read(feast_repo, "item_trends", [entity])[0]["pv"] == 1  # type: ignore[index]
    assert writer.write([item_row(entity, T0 + 60_000, 3)]).written == 1
    assert feast_read(feast_repo, "item_trends", [entity])[0]["pv"] == 3  # type: ignore[index]


def test_key_ttl_is_set_only_when_configured(feast_repo: AppliedRepo) -> None:
    rows = sample_rows()
    OnlineStoreWriter(feast_repo.client, feast_repo.project).write(rows[:1])
    written_at = time.monotonic()
    OnlineStoreWriter(feast_repo.client, feast_repo.project, key_ttl_seconds=3600).write(rows[1:2])
    key = layout(rows[0].view).redis_key(rows[0].entity_id, feast_repo.project)
    assert feast_repo.client.ttl(key) == -1  # no expiry, as Feast without key_ttl_seconds
    key = layout(rows[1].view).redis_key(rows[1].entity_id, feast_repo.project)
    remaining_ms = feast_repo.client.pttl(key)
    # The TTL counts down from 3600 s: no more than the time since the write has gone.
    elapsed_ms = (time.monotonic() - written_at) * 1000
    assert 3_600_000 - elapsed_ms - 1000 <= remaining_ms <= 3_600_000  # type: ignore[operator]


def test_script_reloads_after_script_flush(feast_repo: AppliedRepo) -> None:
    writer = OnlineStoreWriter(feast_repo.client, feast_repo.project)
    rows = sample_rows()
    writer.write(rows[:1])
    feast_repo.client.script_flush()
    assert writer.write(rows[1:]).written == 3


@pytest.mark.parametrize(
    "stored",
    [b"\x08\x96", b"\x08", b"\x0a\x03abc", b"not a timestamp", b"\x08" + b"\xff" * 12],
    ids=["cut-short", "tag-only", "other-wire-type", "foreign", "varint-too-long"],
)
def test_an_unreadable_stored_time_is_replaced_not_a_script_error(
    feast_repo: AppliedRepo, stored: bytes
) -> None:
    """A script error would fail the batch, and the writer retry it forever."""
    [row] = sample_rows()[2:3]
    where = layout(row.view)
    key = where.redis_key(row.entity_id, feast_repo.project)
    feast_repo.client.hset(key, where.ts_field, stored)  # type: ignore[arg-type]
    assert OnlineStoreWriter(feast_repo.client, feast_repo.project).write([row]).written == 1
    assert feast_read(feast_repo, row.view.name, [row.entity_id]) == [row.decoded()]
