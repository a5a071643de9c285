"""Score drift: a baseline of the served model's scores when the reference has none.

The training run can save the features' reference, but not the scores the
model will give live traffic. So when the reference has no ``rec_*`` values,
the job keeps the first ``rows`` recommendations it reads as the score
baseline (saved beside the reports, reused after a restart) and judges later
windows' scores against it: drift then means "the model scores traffic
differently than when it was deployed".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from jobs.drift.columns import COLUMNS, DriftRow
from jobs.drift.reference import drift_frame

SCORE_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "recommendations")
BASELINE_FILE = "score_baseline.parquet"


def has_scores(reference: pd.DataFrame) -> bool:
    return bool(reference[list(SCORE_COLUMNS)].notna().any().any())


def with_scores(reference: pd.DataFrame, baseline: pd.DataFrame) -> pd.DataFrame:
    """The reference with the baseline's score rows appended."""
    return pd.concat([reference, baseline[list(SCORE_COLUMNS)]], ignore_index=True)


@dataclass
class ScoreBaseline:
    """Collects score rows until it holds ``rows`` of them."""

    path: Path
    rows: int
    collected: list[DriftRow] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.collected) >= self.rows

    def add(self, row: DriftRow) -> None:
        self.collected.append(row)

    def save(self) -> pd.DataFrame:
        frame = drift_frame(self.collected)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(self.path, index=False)
        return frame


def score_reference(
    reference: pd.DataFrame, baseline_path: Path, rows: int
) -> tuple[pd.DataFrame, ScoreBaseline | None]:
    """The reference to judge with, and a baseline to fill when it has no scores yet."""
    if has_scores(reference):
        return reference, None
    if baseline_path.exists():
        return with_scores(reference, pd.read_parquet(baseline_path)), None
    return reference, ScoreBaseline(baseline_path, rows)
