"""A new model against the champion on the same held-out rows, and training on an events log."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from jobs.datasets import RowAudit, read_dataset
from jobs.ranker.__main__ import main
from jobs.ranker.against import carried
from schemas.codec import event_codec
from tests.support import requirements

SMALL = ["--max-train-rows", "3000", "--max-eval-rows", "200", "--epochs", "2", "--dim", "8",
         "--full-eval-rows", "50"]  # fmt: skip


def test_indexes_are_carried_through_the_raw_ids() -> None:
    source = np.array([10, 20, 30], np.int64)  # index 2 → 10, 3 → 20, 4 → 30
    target = np.array([20, 30, 40], np.int64)  # 20 → 2, 30 → 3
    indexes = np.array([[0, 1, 2, 3, 4]], np.int32)
    # Padding and OOV stay; 10 is unknown to the target (OOV); 20 and 30 move.
    assert carried(indexes, source, target).tolist() == [[0, 1, 1, 2, 3]]


@pytest.fixture(scope="module")
def events_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first Taobao stream events as the events topic holds them, plus one bad line."""
    source = requirements.dataset("taobao")
    codec = event_codec()
    path = tmp_path_factory.mktemp("export") / "events.jsonl"
    with path.open("wb") as out:
        for event in itertools.islice(read_dataset("taobao", source, RowAudit()), 30_000):
            out.write(codec.encode(event) + b"\n")
        out.write(b'{"user_id": "not an id"}\n')
    return path


def train(log: Path, out: Path, *extra: str) -> tuple[dict[str, object], str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main([*SMALL, "--dataset", "events", "--file", str(log), "--out", str(out), *extra])
    assert code == 0, printed.getvalue()
    return json.loads((out / "metrics.json").read_text()), printed.getvalue()


def test_a_model_trained_on_the_events_log_is_scored_against_the_champion(
    events_log: Path, tmp_path: Path
) -> None:
    champion, _ = train(events_log, tmp_path / "champion")
    metrics, printed = train(
        events_log, tmp_path / "candidate", "--baseline", str(tmp_path / "champion")
    )
    against = metrics["against"]
    assert isinstance(against, dict)
    # The same data, seed and split: the champion's rows are the candidate's, and its
    # served file scores them as it did in its own training.
    served = next(v for v in champion["variants"] if v["variant"] == champion["served_variant"])  # type: ignore[attr-defined]
    assert against["auc"] == pytest.approx(served["auc"], abs=1e-6)
    assert against["beaten"] in (True, False)
    assert f"baseline {tmp_path / 'champion'}" in printed
