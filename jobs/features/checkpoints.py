"""Finding the checkpoint to restore from (Flink keeps ``<dir>/<job id>/chk-<n>/_metadata``)."""

from __future__ import annotations

from pathlib import Path


def latest_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The most recent complete checkpoint under ``checkpoint_dir``, across job ids."""
    complete = [meta.parent for meta in checkpoint_dir.glob("*/chk-*/_metadata")]
    if not complete:
        return None
    return max(complete, key=lambda chk: (chk.stat().st_mtime, int(chk.name.split("-")[1])))
