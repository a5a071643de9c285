"""The Evidently report opens in headless Chromium and draws its drift table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from jobs.drift.check import CheckRules, CheckWindow, run_check
from jobs.drift.columns import drift_rows
from jobs.drift.reports import write_report
from schemas.features import FeatureUpdate
from schemas.records import BehaviorEvent
from tests.jobs.drift.browser import cell_texts, rendered_dom, screenshot
from tests.support import requirements
from tests.support.drift_shift import Shift, category_swap, shift_rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def browser() -> str:
    return requirements.chromium()


@pytest.fixture(scope="module")
def shifted_report(
    stream_reference: pd.DataFrame,
    stream_events: list[BehaviorEvent],
    stream_changelog: list[FeatureUpdate],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[str]]:
    """A report of a window with the category-mix shift; returns its path and drifted columns."""
    shift = Shift(names=("category_mix",))
    rows = shift_rows(stream_changelog[500_000:520_000], shift, category_swap(stream_events, 10))
    window = CheckWindow("render-test", drift_rows(rows), 20_000, 0, 1)
    result = run_check(stream_reference, window, CheckRules(), now_ms=1_800_000_000_000)
    assert result.snapshot is not None
    folder = tmp_path_factory.mktemp("reports")
    drifted = [f.feature for f in result.alert.features if f.drifted]
    return write_report(folder, result.alert, result.snapshot), drifted


def test_report_renders_its_drift_table(shifted_report: tuple[Path, list[str]]) -> None:
    report, drifted = shifted_report
    dom = rendered_dom(report)
    headers = cell_texts(dom, "th")
    for header in ("Column", "Type", "Data Drift", "Stat Test", "Drift Score"):
        assert header in headers
    cells = cell_texts(dom, "td")
    for column in ("user_seq_length", "user_top_category", "item_category"):
        assert column in cells
    # Each drifted column's row says so: the cells after its name read "Detected".
    for column in drifted:
        row = cells[cells.index(column) : cells.index(column) + 8]
        assert "Detected" in row, row
    assert {"PSI", "Jensen-Shannon distance"} <= set(cells)


def test_report_screenshot_is_not_blank(
    shifted_report: tuple[Path, list[str]], tmp_path: Path
) -> None:
    report, _ = shifted_report
    with Image.open(screenshot(report, tmp_path / "report.png")) as image:
        pixels = image.convert("L")
        histogram = pixels.histogram()
    total = sum(histogram)
    near_white = sum(histogram[245:])
    assert pixels.size == (1400, 1800)
    # A drawn report has text, bars and plots: many shades and plenty of non-white.
    assert sum(1 for count in histogram if count) > 50
    assert 1 - near_white / total > 0.02
