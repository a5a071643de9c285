"""What a training run logs in MLflow: hashes, the code revision, the RESULT metrics."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from jobs.ranker.registry import (
    RANKER_SOURCES,
    Lineage,
    content_hash,
    git_revision,
    registry_uri,
    result_metrics,
    settings_params,
)
from jobs.ranker.report import result_line
from jobs.ranker.settings import TrainSettings, load_settings
from runtime.model_registry import DEFAULT_TRACKING_URI
from tests.support.training_metrics import training_metrics


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_files_hash_is_its_sha256(tmp_path: Path) -> None:
    _write(tmp_path / "data.csv", "1,2,3\n")
    assert content_hash(tmp_path / "data.csv") == hashlib.sha256(b"1,2,3\n").hexdigest()


def test_a_folders_hash_depends_on_its_contents_only(tmp_path: Path) -> None:
    for root in (tmp_path / "a", tmp_path / "b"):
        _write(root / "ratings.csv", "u,i\n")
        _write(root / "movies" / "m.csv", "i,c\n")
    assert content_hash(tmp_path / "a") == content_hash(tmp_path / "b")
    _write(tmp_path / "b" / "movies" / "m.csv", "i,c,x\n")
    assert content_hash(tmp_path / "a") != content_hash(tmp_path / "b")
    # A renamed file is another folder, even with the same bytes.
    _write(tmp_path / "c" / "ratings.csv", "u,i\n")
    _write(tmp_path / "c" / "movies" / "n.csv", "i,c\n")
    assert content_hash(tmp_path / "a") != content_hash(tmp_path / "c")


def test_the_sources_hash_ignores_bytecode_and_other_files(tmp_path: Path) -> None:
    _write(tmp_path / "job.py", "x = 1\n")
    before = content_hash(tmp_path, ".py")
    _write(tmp_path / "__pycache__" / "job.cpython-311.py", "junk")
    _write(tmp_path / "notes.txt", "junk")
    assert content_hash(tmp_path, ".py") == before
    _write(tmp_path / "job.py", "x = 2\n")
    assert content_hash(tmp_path, ".py") != before


def test_a_missing_dataset_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        content_hash(tmp_path / "none.csv")


def test_the_code_revision_is_the_checkouts_commit_or_nothing(tmp_path: Path) -> None:
    revision = git_revision()
    assert re.fullmatch(r"[0-9a-f]{40}", revision), revision
    assert git_revision(tmp_path) == ""  # not a checkout


def test_every_result_line_key_becomes_a_metric() -> None:
    line = result_line(training_metrics())
    metrics = result_metrics(line)
    assert list(metrics) == [word.split("=")[0] for word in line.split()[1:]]
    assert metrics["hit_at_10"] == pytest.approx(0.4)
    assert metrics["served_variant_auc"] == pytest.approx(0.89)
    assert metrics["beats_recall_order"] == 1.0 and metrics["eval_rows"] == 500.0
    with pytest.raises(ValueError, match="not a RESULT line"):
        result_metrics("auc=0.5")


def test_registration_is_on_with_the_flag_or_the_tracking_uri() -> None:
    off = load_settings([], {})
    assert registry_uri(off, {}) is None
    assert registry_uri(off, {"MLFLOW_TRACKING_URI": "http://h:1"}) == "http://h:1"
    on = load_settings(["--register"], {})
    assert registry_uri(on, {}) == DEFAULT_TRACKING_URI
    assert load_settings([], {"STREAMREC_TRAIN_REGISTER": "1"}).register


def test_params_are_every_setting_and_the_lineage(tmp_path: Path) -> None:
    data = tmp_path / "events.csv"
    _write(data, "1,2,3,pv,1511544070\n")
    settings = TrainSettings(dataset="taobao-9days", file=data, out=tmp_path / "out")
    params = settings_params(settings)
    assert params["dataset"] == "taobao-9days" and params["epochs"] == "8"
    assert params["file"] == str(data) and params["register"] == "False"
    lineage = Lineage.of(settings)
    assert lineage.dataset_sha256 == content_hash(data)
    assert lineage.sources_sha256 == content_hash(RANKER_SOURCES, ".py")
    tags = lineage.tags()
    assert tags["mlflow.source.git.commit"] == lineage.git_commit == git_revision()
    assert tags["streamrec.dataset_sha256"] == lineage.dataset_sha256


def test_a_registered_model_gets_the_drift_reference_of_the_population_it_will_serve(
    tmp_path: Path,
) -> None:
    from jobs.ranker.__main__ import drift_reference_argv

    bundled = TrainSettings(out=tmp_path / "m")
    argv = drift_reference_argv(bundled)
    assert argv[1:4] == ["-m", "jobs.drift", "reference"] and "--dataset" not in argv
    assert argv[argv.index("--out") + 1] == str(tmp_path / "m" / "drift_reference.parquet")
    retrained = TrainSettings(out=tmp_path / "m", dataset="events", file=tmp_path / "e.jsonl")
    argv = drift_reference_argv(retrained)
    assert argv[argv.index("--dataset") + 1] == "events"
    assert argv[argv.index("--file") + 1] == str(tmp_path / "e.jsonl")
