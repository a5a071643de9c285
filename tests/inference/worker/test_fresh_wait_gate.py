"""The fresh wait stops when waiting stops paying: a store seconds behind its triggers
costs a batch nothing after a few fruitless waits, and waiting resumes once it catches up."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inference.worker.features import Row
from inference.worker.freshness import WaitGate
from schemas.records import BehaviorEvent, RecRequest
from tests.inference.worker.test_prepare_covisit import MemoryReader, preparer

T = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def is_open(gate: WaitGate) -> bool:
    """Read afresh each time (an attribute check would be narrowed by the one before)."""
    return gate.open


def test_a_new_gate_waits_once_and_that_wait_decides() -> None:
    clock = Clock()
    behind = WaitGate(give_up_after=3, probe_every_s=1.0, clock=clock)
    assert is_open(behind)
    behind.record(caught_up=0)
    assert not is_open(behind)  # one batch found the store behind, not three
    caught_up = WaitGate(give_up_after=3, probe_every_s=1.0, clock=clock)
    caught_up.record(caught_up=1)
    for _ in range(2):
        caught_up.record(caught_up=0)
    assert is_open(caught_up)  # open: shuts after three fruitless waits in a row


def test_the_gate_shuts_after_fruitless_waits_probes_and_reopens() -> None:
    clock = Clock()
    gate = WaitGate(give_up_after=3, probe_every_s=1.0, clock=clock)
    gate.record(caught_up=1)  # a store caught up once: the gate is open
    for _ in range(2):
        gate.record(caught_up=0)
    assert is_open(gate)  # two fruitless waits: not yet
    gate.record(caught_up=0)
    assert not is_open(gate)
    clock.now += 1.0
    assert is_open(gate)  # one probe
    gate.record(caught_up=0)
    assert not is_open(gate)  # still behind: shut for another second
    clock.now += 1.0
    gate.record(caught_up=2)
    assert is_open(gate)
    gate.record(caught_up=0)
    assert is_open(gate)  # the count started again


def test_zero_never_gives_up() -> None:
    gate = WaitGate(give_up_after=0)
    for _ in range(100):
        gate.record(caught_up=0)
    assert is_open(gate)


class LaggingStore(MemoryReader):
    """User 1's rows never hold the trigger; counts the reads of users."""

    def __init__(self) -> None:
        super().__init__()
        self.user_reads = 0

    def users(self, ids: Sequence[int]) -> tuple[list[Row | None], list[Row | None]]:
        self.user_reads += 1
        return super().users(ids)


def _triggered() -> list[RecRequest]:
    click = BehaviorEvent(user_id=1, item_id=999, category_id=1, behavior="pv", ts=T + 5)
    return [RecRequest(request_id="r", user_id=1, ts=T + 5, k=5, trigger=click)]


def test_batches_stop_waiting_for_a_store_that_does_not_catch_up(tmp_path: Path) -> None:
    reader = LaggingStore()
    prep = preparer(tmp_path, reader, fresh_wait_ms=6, fresh_wait_give_up=2)
    reads = []
    for _ in range(4):
        before = reader.user_reads
        batch = prep.prepare(_triggered())
        reads.append(reader.user_reads - before)
        assert batch.requests[0].trigger_features == "folded"  # answered all the same
    # The first wait re-reads the store every 2 ms; it catches nothing up, so the
    # batches after it fold at once (one read each).
    assert reads[0] > 1
    assert reads[1:] == [1, 1, 1]


def test_with_give_up_zero_every_batch_waits(tmp_path: Path) -> None:
    reader = LaggingStore()
    prep = preparer(tmp_path, reader, fresh_wait_ms=6, fresh_wait_give_up=0)
    for _ in range(4):
        before = reader.user_reads
        prep.prepare(_triggered())
        assert reader.user_reads - before > 1
