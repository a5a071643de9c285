"""The champion's view of the new model's rows, and the events log training reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jobs.datasets import RowAudit, read_dataset
from jobs.ranker.against import carried
from schemas.codec import event_codec
from schemas.records import BehaviorEvent


def test_indexes_are_carried_through_the_raw_ids() -> None:
    source = np.array([10, 20, 30], np.int64)  # index 2 → 10, 3 → 20, 4 → 30
    target = np.array([20, 30, 40], np.int64)  # 20 → 2, 30 → 3
    indexes = np.array([[0, 1, 2, 3, 4]], np.int32)
    # Padding and OOV stay; 10 is unknown to the target (OOV); 20 and 30 move.
    assert carried(indexes, source, target).tolist() == [[0, 1, 1, 2, 3]]


def test_the_events_log_reads_the_topics_records_and_counts_the_bad(tmp_path: Path) -> None:
    codec = event_codec()
    events = [BehaviorEvent(1, 10, 3, "pv", 1_700_000_000_000 + n) for n in range(3)]
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(codec.encode(e) + b"\n" for e in events) + b'{"user_id": "x"}\n\n')
    audit = RowAudit()
    assert list(read_dataset("events", log, audit)) == events
    assert audit.rows == 4 and audit.bad_rows == 1
