from __future__ import annotations

import pytest

from jobs.replay.timeshift import TimeShift
from jobs.replay.triggers import TriggerSampler
from jobs.replay.verify import Consumed, compare
from schemas.records import BehaviorEvent

EVENTS = [
    BehaviorEvent(u % 7 + 1, i + 1, 3, "pv", 1_511_544_070_000 + i)
    for i, u in enumerate(range(1000))
]


def test_rate_and_determinism() -> None:
    sampler, again = TriggerSampler(0.1, seed=3), TriggerSampler(0.1, seed=3)
    first = [sampler.after(e) for e in EVENTS]
    second = [again.after(e) for e in EVENTS]
    assert first == second
    issued = [r for r in first if r is not None]
    assert 60 < len(issued) < 140
    assert len({r.request_id for r in issued}) == len(issued)
    request, event = next((r, e) for r, e in zip(first, EVENTS, strict=True) if r is not None)
    assert (request.user_id, request.ts, request.trigger) == (event.user_id, event.ts, event)


def test_rate_bounds() -> None:
    never, always = TriggerSampler(0.0), TriggerSampler(1.0)
    assert all(never.after(e) is None for e in EVENTS)
    assert all(always.after(e) is not None for e in EVENTS)
    with pytest.raises(ValueError, match="request rate"):
        TriggerSampler(1.5)


def test_time_shift_keeps_gaps() -> None:
    shift = TimeShift(start_ms=2_000_000_000_000)
    shifted = [shift.apply(e) for e in EVENTS[:3]]
    assert [e.ts for e in shifted] == [2_000_000_000_000, 2_000_000_000_001, 2_000_000_000_002]


def test_compare_detects_loss_duplicates_and_reordering() -> None:
    a, b, c = EVENTS[0], EVENTS[7], EVENTS[14]  # one user, in this order
    exact = compare([a, b, c], [Consumed(0, 0, a), Consumed(0, 1, b), Consumed(0, 2, c)])
    assert exact.exact
    lost = compare([a, b, c], [Consumed(0, 0, a), Consumed(0, 1, c)])
    assert (lost.missing, lost.exact) == (1, False)
    dup = compare([a, b], [Consumed(0, 0, a), Consumed(0, 1, b), Consumed(0, 2, b)])
    assert dup.duplicated == 1
    swapped = compare([a, b], [Consumed(0, 0, b), Consumed(0, 1, a)])
    assert (swapped.users_out_of_order, swapped.missing) == (1, 0)
    split = compare([a, b], [Consumed(0, 0, a), Consumed(1, 0, b)])
    assert split.users_split_across_partitions == 1
