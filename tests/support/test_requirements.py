"""A missing dataset, browser or Redis fails with what to do, never a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import requirements


def test_a_missing_data_folder_fails_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMREC_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(pytest.fail.Exception, match="STREAMREC_DATA_DIR"):
        requirements.dataset("taobao")


def test_the_shared_data_is_found() -> None:
    assert requirements.dataset("taobao").is_file()


def test_an_external_kafka_without_redis_fails() -> None:
    with pytest.raises(pytest.fail.Exception, match="STREAMREC_TEST_REDIS_URL"):
        requirements.redis_url("")
