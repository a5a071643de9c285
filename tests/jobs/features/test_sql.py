"""The generated SQL and the settings behind it (no Flink needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.features.checkpoints import latest_checkpoint
from jobs.features.dead_letter_sql import RESERVE_BYTES, original_budget_chars, sink_options
from jobs.features.functions_jar import source_digest
from jobs.features.settings import FeatureJobSettings, env_overrides
from jobs.features.sql import EVENTS_VIEW, insert_statements, interval, statements
from runtime.kafka import DEAD_LETTER_MAX_BYTES, dead_letter_spec


def test_interval_literals_keep_milliseconds() -> None:
    assert interval(300_000) == "INTERVAL '0 00:05:00.000' DAY TO SECOND(3)"
    assert interval(5_500) == "INTERVAL '0 00:00:05.500' DAY TO SECOND(3)"
    assert interval(90_061_001) == "INTERVAL '1 01:01:01.001' DAY TO SECOND(3)"


def test_statements_follow_the_settings() -> None:
    settings = FeatureJobSettings(window_ms=600_000, slide_ms=60_000, sequence_length=7,
                                  top_items=3, views=("user_window",), bounded=True,
                                  window_mode="sql")  # fmt: skip
    ddl, inserts = statements(settings)
    text = "\n".join(ddl + inserts)
    assert "ROWS BETWEEN" not in "\n".join(inserts)  # no fresh view requested
    assert len(inserts) == 2  # the dead letters always, plus the one view
    assert "ARRAY_SLICE(ARRAY_SORT(ARRAY_AGG(packed)), -7)" in text
    assert "'scan.bounded.mode' = 'latest-offset'" in text
    assert interval(60_000) in text and interval(600_000) in text


@pytest.mark.parametrize("mode", ["changed", "every"])
def test_the_keyed_functions_views_go_to_raw_sinks_of_their_own(mode: str) -> None:
    """Records arrive as bytes: a raw sink per view, chained to its function, no SQL windows."""
    settings = FeatureJobSettings(views=("user_recent", "item_window"), window_mode=mode)
    ddl, inserts = statements(settings)[0], insert_statements(settings)
    assert inserts[1:] == [
        "INSERT INTO user_recent_record_sink\nSELECT changelog_key, changelog_value FROM "
        "user_recent_records",
        "INSERT INTO item_window_record_sink\nSELECT changelog_key, changelog_value FROM "
        "item_window_records",
    ]
    sink = next(s for s in ddl if "TABLE item_window_record_sink" in s)
    assert "'value.format' = 'raw'" in sink and "'key.format' = 'raw'" in sink
    assert "HOP(" not in "\n".join(inserts) and "OVER" not in "\n".join(inserts)


def test_settings_refuse_inconsistent_windows_and_unknown_views() -> None:
    with pytest.raises(ValueError, match="whole number of slides"):
        FeatureJobSettings(window_ms=1000, slide_ms=300)
    with pytest.raises(ValueError, match="unknown views"):
        FeatureJobSettings(views=("user_window", "clicks"))
    with pytest.raises(ValueError, match="WINDOW_MODE must be one of changed, every, sql"):
        FeatureJobSettings(window_mode="newest")
    with pytest.raises(ValueError, match="WATERMARK_INTERVAL_MS must be at least 1"):
        FeatureJobSettings(watermark_interval_ms=0)


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


def test_dead_letter_producer_takes_what_the_dead_letter_topic_takes() -> None:
    """The producer's default max.request.size (1 MiB) refused dead letters of ~0.8 MiB events."""
    topic_limit = dead_letter_spec("x.dlq").config["max.message.bytes"]
    assert sink_options(FeatureJobSettings())["properties.max.request.size"] == topic_limit
    assert topic_limit == str(DEAD_LETTER_MAX_BYTES)
    options = sink_options(FeatureJobSettings(dead_letter_max_bytes=512 * 1024))
    assert options["properties.max.request.size"] == str(512 * 1024)


def test_original_budget_leaves_the_reserve_and_whole_base64_quads() -> None:
    for limit in (128 * 1024, 512 * 1024 + 3, DEAD_LETTER_MAX_BYTES):
        chars = original_budget_chars(limit)
        assert chars % 4 == 0
        assert limit - RESERVE_BYTES - 4 < chars <= limit - RESERVE_BYTES
    # A 1 MiB event (1.4 MB in base64) fits whole under the default limit.
    assert original_budget_chars(DEAD_LETTER_MAX_BYTES) > 4 * (1024 * 1024) // 3 + 4


def test_dead_letter_insert_cuts_only_past_the_budget_and_says_so() -> None:
    _, inserts = statements(FeatureJobSettings(dead_letter_max_bytes=256 * 1024))
    chars = original_budget_chars(256 * 1024)
    assert f"SUBSTRING(b64, 1, {chars})" in inserts[0]
    assert f"first {chars // 4 * 3} of " in inserts[0]


def test_settings_refuse_a_dead_letter_limit_with_no_room_and_a_negative_ttl() -> None:
    with pytest.raises(ValueError, match="DEAD_LETTER_MAX_BYTES must be at least"):
        FeatureJobSettings(dead_letter_max_bytes=64 * 1024)
    with pytest.raises(ValueError, match="STATE_TTL_MS"):
        FeatureJobSettings(state_ttl_ms=-1)


def test_the_views_read_the_events_view_not_the_source() -> None:
    """The job puts its watermark floor in the events view; nothing may bypass it."""
    ddl, inserts = statements(FeatureJobSettings())
    readers = [s for s in ddl + inserts if "FROM behavior_source" in s]
    assert len(readers) == 1 and readers[0].startswith(f"CREATE TEMPORARY VIEW {EVENTS_VIEW}")
