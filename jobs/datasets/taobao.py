"""Taobao UserBehavior CSV: ``user_id,item_id,category_id,behavior_type,timestamp``.

No header; ``timestamp`` is Unix seconds, turned into milliseconds here. The
behaviour names already match the contract (``pv``, ``cart``, ``fav``, ``buy``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from jobs.datasets.audit import RowAudit
from jobs.datasets.validate import to_event
from schemas.records import BehaviorEvent

COLUMNS = 5


def parse_taobao_line(line: str) -> BehaviorEvent | str:
    """One CSV line to an event, or the reason it is bad."""
    fields = line.strip().split(",")
    if len(fields) != COLUMNS:
        return f"expected {COLUMNS} columns, got {len(fields)}"
    user, item, category, behavior, seconds = fields
    try:
        ids = int(user), int(item), int(category)
        ts_ms = int(seconds) * 1000
    except ValueError:
        return "non-integer id or timestamp"
    return to_event(*ids, behavior, ts_ms)


def read_taobao(path: Path, audit: RowAudit) -> Iterator[BehaviorEvent]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            audit.rows += 1
            parsed = parse_taobao_line(line)
            if isinstance(parsed, str):
                audit.reject(line_no, parsed, line)
            else:
                yield parsed
