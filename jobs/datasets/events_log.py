"""The events topic's own records, one JSON document per line (what ``jobs.retrain`` exports).

Each line is a record exactly as producers wrote it to the events topic
(:class:`~schemas.records.BehaviorEvent` JSON, times in milliseconds), so a model can
be retrained on what the pipeline saw. Lines the event codec refuses are counted in
the audit with its reason, as the Flink job would dead-letter them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from jobs.datasets.audit import RowAudit
from schemas.codec import event_codec
from schemas.errors import InvalidRecord
from schemas.records import BehaviorEvent


def read_events_log(path: Path, audit: RowAudit) -> Iterator[BehaviorEvent]:
    codec = event_codec()  # its clock check refuses only times ahead of now
    with path.open("rb") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            audit.rows += 1
            try:
                yield codec.decode(line.rstrip(b"\n"))
            except InvalidRecord as error:
                audit.reject(line_no, f"{error.kind}: {error}", line.decode(errors="replace"))
