from __future__ import annotations

from pathlib import Path

import pytest

from jobs.drift.cli import build_parser, main
from jobs.drift.errors import ReferenceUnavailable, SettingsError
from jobs.drift.reference import load_reference
from jobs.drift.reports import prune_reports
from jobs.drift.settings import from_env


def test_settings_read_the_environment() -> None:
    settings = from_env(
        {
            "STREAMREC_MODEL_DIR": "/models/v3",
            "STREAMREC_DRIFT_WINDOW_ROWS": "1000",
            "STREAMREC_DRIFT_WINDOW_SECONDS": "0",
            "STREAMREC_DRIFT_RECOMMENDATIONS_TOPIC": "",
            "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": "kafka:19092",
        }
    )
    assert settings.reference == Path("/models/v3/drift_reference.parquet")
    assert (settings.window_rows, settings.window_seconds) == (1000, 0.0)
    assert settings.recommendations_topic == ""
    assert settings.kafka.bootstrap_servers == "kafka:19092"
    assert settings.metrics_port == 9109


def test_bad_settings_say_which_variable() -> None:
    with pytest.raises(SettingsError, match="STREAMREC_DRIFT_MIN_ROWS"):
        from_env({"STREAMREC_DRIFT_MIN_ROWS": "many"})
    with pytest.raises(SettingsError, match="both are 0"):
        from_env({"STREAMREC_DRIFT_WINDOW_ROWS": "0", "STREAMREC_DRIFT_WINDOW_SECONDS": "0"})


def test_missing_reference_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(ReferenceUnavailable, match=r"jobs\.drift reference"):
        load_reference(tmp_path / "drift_reference.parquet")


def test_prune_keeps_the_newest_pairs(tmp_path: Path) -> None:
    for stamp in ("0001", "0002", "0003"):
        for suffix in (".html", ".json"):
            (tmp_path / f"drift-{stamp}-x{suffix}").write_text("{}")
    removed = prune_reports(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["drift-0001-x.html", "drift-0001-x.json"]
    assert len(list(tmp_path.iterdir())) == 4


def test_help_lists_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "watch" in out and "reference" in out
    args = build_parser().parse_args(["reference", "--out", "x.parquet"])
    assert (args.dataset, args.max_rows) == ("taobao", 200_000)
