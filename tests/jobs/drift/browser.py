"""Headless Chromium: a page's DOM after its scripts ran, and a screenshot of it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Evidently's report draws itself with React after load; give its scripts time.
    "--virtual-time-budget=15000",
)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(page: Path, *extra: str) -> str:
    binary = chromium_path()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    return done.stdout


def rendered_dom(page: Path) -> str:
    """The DOM after the page's scripts ran, without script and style elements.

    Evidently's HTML embeds its data and its JavaScript; dropping them leaves
    only what the scripts rendered, so a name found here was drawn, not shipped.
    """
    dom = _run(page, "--dump-dom")
    return re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)


def screenshot(page: Path, out: Path, width: int = 1400, height: int = 1800) -> Path:
    _run(page, f"--screenshot={out}", f"--window-size={width},{height}")
    return out


def cell_texts(dom: str, tag: str) -> list[str]:
    """The text of every ``<tag>`` element (``th`` or ``td``), markup removed."""
    cells = re.findall(rf"<{tag}\b[^>]*>(.*?)</{tag}>", dom, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]
