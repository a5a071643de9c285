"""Counting what a dataset reader could not use."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RowAudit:
    """Rows read, rows skipped on purpose, and bad rows by reason with a few examples."""

    rows: int = 0
    filtered: int = 0
    bad: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5

    def reject(self, line_no: int, reason: str, raw: str) -> None:
        self.bad[reason] += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(f"line {line_no}: {reason}: {raw.rstrip()[:120]!r}")

    @property
    def bad_rows(self) -> int:
        return sum(self.bad.values())

    def summary(self) -> str:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in self.bad.most_common())
        text = f"{self.rows} rows, {self.bad_rows} bad, {self.filtered} filtered"
        return f"{text} ({reasons})" if reasons else text
