"""Evidently reports on disk: one HTML and one JSON per judged check, the latest N kept."""

from __future__ import annotations

from pathlib import Path

from evidently.core.report import Snapshot

from schemas.records import DriftAlert


def report_stem(alert: DriftAlert) -> str:
    """``drift-<checked_at, 13 digits>-<check id>``: names sort in check order."""
    return f"drift-{alert.checked_at:013d}-{alert.check_id}"


def write_report(folder: Path, alert: DriftAlert, snapshot: Snapshot) -> Path:
    """Write ``<stem>.html`` and ``<stem>.json``; return the HTML path."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = report_stem(alert)
    html = folder / f"{stem}.html"
    snapshot.save_html(str(html))
    (folder / f"{stem}.json").write_text(snapshot.json(), encoding="utf-8")
    return html


def prune_reports(folder: Path, keep: int) -> list[Path]:
    """Delete all but the ``keep`` newest reports (both files of each); return what went."""
    stems = sorted({path.stem for path in folder.glob("drift-*.*")})
    removed = []
    for stem in stems[: max(len(stems) - keep, 0)]:
        for suffix in (".html", ".json"):
            path = folder / f"{stem}{suffix}"
            if path.exists():
                path.unlink()
                removed.append(path)
    return removed
