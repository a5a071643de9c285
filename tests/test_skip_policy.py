"""Only GPU checks may skip; any other skip turns the run red (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import unexpected_skips


def report(nodeid: str, reason: str) -> pytest.TestReport:
    longrepr = ("tests/x.py", 3, f"Skipped: {reason}")
    return pytest.TestReport(nodeid, ("tests/x.py", 3, "t"), {}, "skipped", longrepr, "call")


def test_a_missing_dataset_skip_is_unexpected() -> None:
    skipped = [report("tests/x.py::a", "no data"), report("tests/x.py::b", "needs a GPU")]
    assert unexpected_skips(skipped) == ["tests/x.py::a: Skipped: no data"]


def test_gpu_skips_are_allowed() -> None:
    assert unexpected_skips([report("tests/x.py::b", "needs a GPU")]) == []
