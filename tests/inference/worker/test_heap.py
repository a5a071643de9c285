"""The collector's rhythm: frozen and rarely run by default, Python's own with 0."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from inference.worker import heap
from inference.worker.errors import SettingsError
from inference.worker.settings import WorkerSettings


@pytest.fixture(autouse=True)
def restore_collector() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_settle_freezes_what_exists_and_raises_the_young_threshold() -> None:
    long_lived = [{"row": n} for n in range(1000)]
    assert heap.settle(50_000) == (50_000, *heap.OLDER_GENERATION_THRESHOLDS)
    assert gc.get_freeze_count() >= len(long_lived)


def test_zero_leaves_the_collector_as_python_set_it() -> None:
    gc.set_threshold(700, 10, 10)
    assert heap.settle(0) == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_the_default_settles_and_a_negative_threshold_is_refused() -> None:
    assert WorkerSettings().gc_young_threshold == 50_000
    with pytest.raises(SettingsError, match="GC_YOUNG_THRESHOLD must be >= 0"):
        WorkerSettings(gc_young_threshold=-1)
