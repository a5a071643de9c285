"""The shared-rows cache: its time to live is the bound on how stale an item's features may
be, stock is never cached, and 0 turns it off (no services: an in-memory reader)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inference.worker.features import Row
from inference.worker.prepare import BatchPreparer
from inference.worker.shared_rows import SharedRows
from tests.inference.worker.test_prepare_covisit import MemoryReader, preparer, request


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_value_lives_for_the_ttl_and_not_a_moment_longer() -> None:
    clock = Clock()
    cache: SharedRows[int, str | None] = SharedRows(0.5, clock=clock)
    cache.put([(1, "a"), (2, None)])
    assert cache.split([1, 2, 3]) == ({1: "a", 2: None}, [3])  # a missing row is cached too
    clock.now += 0.499
    assert cache.split([1]) == ({1: "a"}, [])
    clock.now += 0.002
    assert cache.split([1, 2]) == ({}, [1, 2])


def test_a_zero_ttl_keeps_nothing() -> None:
    cache: SharedRows[int, str] = SharedRows(0.0)
    cache.put([(1, "a")])
    assert cache.split([1]) == ({}, [1]) and len(cache) == 0


def test_a_full_cache_drops_expired_entries_first_then_everything() -> None:
    clock = Clock()
    cache: SharedRows[int, int] = SharedRows(1.0, max_entries=3, clock=clock)
    cache.put([(1, 1), (2, 2)])
    clock.now += 2  # 1 and 2 expire
    cache.put([(3, 3), (4, 4)])
    assert len(cache) == 2 and cache.split([3, 4]) == ({3: 3, 4: 4}, [])
    cache.put([(5, 5), (6, 6)])  # four fresh entries over a bound of three
    assert len(cache) == 0


class ChangingReader(MemoryReader):
    """Item 103's trends row as last set, and a stock set; counts the rows read per call."""

    def __init__(self) -> None:
        super().__init__()
        self.pv = 1
        self.sold_out: set[int] = set()
        self.rows_read: list[list[int]] = []

    def items(
        self, ids: Sequence[int], stock_of: Sequence[int] | None = None
    ) -> tuple[list[Row | None], list[bool]]:
        self.rows_read.append(list(ids))
        row: Row = {"category_id": 2, "pv": self.pv, "cart": 0, "fav": 0, "buy": 0}
        stock_ids = ids if stock_of is None else stock_of
        return [row if i == 103 else None for i in ids], [i in self.sold_out for i in stock_ids]


def _prepared_103(prep: BatchPreparer) -> tuple[float | None, bool]:
    """Item 103's trend score as the batch saw it, and whether the batch had it out of stock."""
    batch = prep.prepare([request()])
    item = batch.items.get(103)
    return (item.trend_score if item else None), 103 in batch.out_of_stock


def test_item_rows_are_reused_within_the_ttl_and_stock_is_read_every_time(
    tmp_path: Path,
) -> None:
    reader, clock = ChangingReader(), Clock()
    prep = preparer(tmp_path, reader, shared_rows_ttl_ms=500)
    prep.item_rows = SharedRows(0.5, clock=clock)
    assert _prepared_103(prep) == (1.0, False)
    reader.pv, reader.sold_out = 7, {103}
    # Within the TTL the old trends row is used; the sell-out shows at once.
    assert _prepared_103(prep) == (1.0, True)
    assert reader.rows_read[-1] == []  # every candidate's row came from the cache
    clock.now += 0.501
    assert _prepared_103(prep) == (7.0, True)


def test_with_the_cache_off_every_batch_reads_every_row(tmp_path: Path) -> None:
    reader = ChangingReader()
    prep = preparer(tmp_path, reader, shared_rows_ttl_ms=0)
    assert _prepared_103(prep) == (1.0, False)
    reader.pv = 7
    assert _prepared_103(prep) == (7.0, False)
    assert reader.rows_read[0] == reader.rows_read[1] and 103 in reader.rows_read[1]
