"""Session data for the drift tests: the stream's events, changelog rows and reference."""

from __future__ import annotations

import pandas as pd
import pytest

from jobs.datasets import RowAudit, read_dataset
from jobs.drift.columns import drift_rows
from jobs.drift.reference import changelog_from_events, drift_frame
from schemas.features import FeatureUpdate
from schemas.records import BehaviorEvent
from tests.support import requirements

REFERENCE_ROWS = 100_000


@pytest.fixture(scope="session")
def stream_events() -> list[BehaviorEvent]:
    path = requirements.dataset("taobao")
    return list(read_dataset("taobao", path, RowAudit()))


@pytest.fixture(scope="session")
def stream_changelog(stream_events: list[BehaviorEvent]) -> list[FeatureUpdate]:
    return changelog_from_events(stream_events)


@pytest.fixture(scope="session")
def stream_reference(stream_changelog: list[FeatureUpdate]) -> pd.DataFrame:
    """What `python -m jobs.drift reference` saves: a seeded sample of the stream's rows."""
    frame = drift_frame(drift_rows(stream_changelog))
    return frame.sample(REFERENCE_ROWS, random_state=0).reset_index(drop=True)
