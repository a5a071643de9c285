"""The generated SQL and the settings behind it (no Flink needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.features.checkpoints import latest_checkpoint
from jobs.features.functions_jar import source_digest
from jobs.features.settings import FeatureJobSettings, env_overrides
from jobs.features.sql import interval, statements


def test_interval_literals_keep_milliseconds() -> None:
    assert interval(300_000) == "INTERVAL '0 00:05:00.000' DAY TO SECOND(3)"
    assert interval(5_500) == "INTERVAL '0 00:00:05.500' DAY TO SECOND(3)"
    assert interval(90_061_001) == "INTERVAL '1 01:01:01.001' DAY TO SECOND(3)"


def test_statements_follow_the_settings() -> None:
    settings = FeatureJobSettings(window_ms=600_000, slide_ms=60_000, sequence_length=7,
                                  top_items=3, views=("user_window",), bounded=True)  # fmt: skip
    ddl, inserts = statements(settings)
    text = "\n".join(ddl + inserts)
    assert "ROWS BETWEEN" not in "\n".join(inserts)  # no fresh view requested
    assert len(inserts) == 2  # the dead letters always, plus the one view
    assert "ARRAY_SLICE(ARRAY_SORT(ARRAY_AGG(packed)), -7)" in text
    assert "'scan.bounded.mode' = 'latest-offset'" in text
    assert interval(60_000) in text and interval(600_000) in text


def test_settings_refuse_inconsistent_windows_and_unknown_views() -> None:
    with pytest.raises(ValueError, match="whole number of slides"):
        FeatureJobSettings(window_ms=1000, slide_ms=300)
    with pytest.raises(ValueError, match="unknown views"):
        FeatureJobSettings(views=("user_window", "clicks"))


def test_environment_overrides_only_known_fields() -> None:
    env = {"STREAMREC_FEATURES_WINDOW_MS": "60000", "STREAMREC_FEATURES_NOPE": "1"}
    assert env_overrides(env) == {"window_ms": "60000"}


def test_latest_checkpoint_picks_the_newest_complete_one(tmp_path: Path) -> None:
    assert latest_checkpoint(tmp_path) is None
    for job, chk in (("a", 3), ("a", 4), ("b", 1)):
        (tmp_path / job / f"chk-{chk}").mkdir(parents=True)
    (tmp_path / "a" / "chk-3" / "_metadata").write_text("x")
    assert latest_checkpoint(tmp_path) == tmp_path / "a" / "chk-3"  # chk-4 is incomplete


def test_function_jar_is_rebuilt_when_its_source_changes(tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("<project/>")
    (tmp_path / "A.java").write_text("class A {}")
    before = source_digest(tmp_path)
    (tmp_path / "A.java").write_text("class A { int x; }")
    assert source_digest(tmp_path) != before
