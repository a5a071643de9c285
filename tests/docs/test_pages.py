"""The documents stay readable: a short README, no page over 600 lines, links that resolve."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_no_page_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in markdown_files()
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}


def test_relative_links_resolve() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in markdown_files()
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert broken == []
