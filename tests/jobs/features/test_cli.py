"""The feature job's command line in process: flags over variables, --explain, restore paths."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from jobs.features import cli
from jobs.features.cli import (
    build_parser,
    main,
    port_taken,
    restore_path,
    settings_from,
    warn_if_metrics_port_taken,
    with_metrics,
)
from jobs.features.settings import FeatureJobSettings


def test_flags_win_over_variables_and_given_jars_skip_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMREC_FEATURES_WINDOW_MS", "600000")
    monkeypatch.setenv("STREAMREC_FEATURES_SLIDE_MS", "300000")
    args = build_parser().parse_args(
        ["--slide-ms", "120000", "--jar", str(tmp_path / "x.jar"), "--from-group-offsets"]
    )
    settings = settings_from(args, tmp_path / "no-cache")
    assert (settings.window_ms, settings.slide_ms) == (600_000, 120_000)
    assert settings.connector_jars == (tmp_path / "x.jar",)
    assert not settings.from_earliest
    assert not (tmp_path / "no-cache").exists()  # nothing fetched or built


def test_explain_prints_only_the_chosen_views(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jar = str(tmp_path / "x.jar")
    assert main(["--explain", "--views", "item_window", "--jar", jar]) == 0
    sql = capsys.readouterr().out
    assert "INSERT INTO item_window_record_sink" in sql
    assert "-- item_window_records: records of the keyed Java functions" in sql
    assert "INSERT INTO user_window" not in sql
    assert "INSERT INTO dead_letter_sink" in sql  # bad input always has somewhere to go
    main(["--explain", "--views", "item_window", "--window-mode", "sql", "--jar", jar])
    assert "INSERT INTO item_window_sink" in capsys.readouterr().out


def test_restore_latest_needs_a_complete_checkpoint(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["--restore-from", "latest", "--checkpoint-dir", str(tmp_path), "--jar", "x.jar"]
    )
    settings = settings_from(args, tmp_path)
    with pytest.raises(SystemExit, match="no complete checkpoint"):
        restore_path(args, settings)
    checkpoint = tmp_path / "0fcc306ede87cbd130736248a5e38c4c" / "chk-3"
    checkpoint.mkdir(parents=True)
    (checkpoint / "_metadata").write_text("")
    assert restore_path(args, settings) == checkpoint.resolve().as_uri()


def test_restore_auto_starts_fresh_without_a_checkpoint_and_restores_the_latest_after(
    tmp_path: Path,
) -> None:
    args = build_parser().parse_args(
        ["--restore-from", "auto", "--checkpoint-dir", str(tmp_path), "--jar", "x.jar"]
    )
    settings = settings_from(args, tmp_path)
    assert restore_path(args, settings) is None
    checkpoint = tmp_path / "0fcc306ede87cbd130736248a5e38c4c" / "chk-7"
    checkpoint.mkdir(parents=True)
    (checkpoint / "_metadata").write_text("")
    assert restore_path(args, settings) == checkpoint.resolve().as_uri()


def test_a_local_run_gets_the_reporters_jars_and_a_submitted_job_no_reporter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jars = (tmp_path / "prom.jar", tmp_path / "bound.jar")
    monkeypatch.setattr(cli, "reporter_jars", lambda cache: jars)
    local = build_parser().parse_args(["--jar", "x.jar"])
    settings = with_metrics(local, settings_from(local, tmp_path), tmp_path)
    assert (settings.metrics_port, settings.metrics_jars) == (9251, jars)
    # On a cluster its own reporter serves the metrics: nothing to build or ship.
    monkeypatch.setattr(cli, "reporter_jars", lambda cache: pytest.fail("nothing to build"))
    submitted = build_parser().parse_args(["--jar", "x.jar", "--detach"])
    settings = with_metrics(submitted, settings_from(submitted, tmp_path), tmp_path)
    assert (settings.metrics_port, settings.metrics_jars) == (0, ())
    off = build_parser().parse_args(["--jar", "x.jar", "--metrics-port", "0"])
    assert with_metrics(off, settings_from(off, tmp_path), tmp_path).metrics_jars == ()


def test_a_taken_metrics_port_is_said_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken("127.0.0.1", port)
        warn_if_metrics_port_taken(FeatureJobSettings(metrics_port=port))
    assert f"127.0.0.1:{port} is taken" in capsys.readouterr().err
    assert not port_taken("127.0.0.1", port)
    warn_if_metrics_port_taken(FeatureJobSettings(metrics_port=0))
    assert capsys.readouterr().err == ""
