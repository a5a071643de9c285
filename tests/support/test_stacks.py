"""Where a check's own stack lives (no services)."""

from __future__ import annotations

from pathlib import Path

from tests.support.stacks import run_home


def test_a_run_home_is_made_where_no_stack_folder_exists_yet(tmp_path: Path) -> None:
    # A fresh clone has no .stack: make canary-check failed there before its stack started.
    root = tmp_path / "fresh-clone" / ".stack"
    first, second = run_home("lifecycle-", root), run_home("lifecycle-", root)
    assert first.is_dir() and second.is_dir() and first != second
    assert first.parent == root and first.name.startswith("lifecycle-")
