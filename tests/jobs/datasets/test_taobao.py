from __future__ import annotations

from pathlib import Path

from jobs.datasets import RowAudit, read_dataset
from jobs.datasets.taobao import parse_taobao_line, read_taobao
from schemas.records import BehaviorEvent
from tests.support import requirements


def test_parses_a_row_into_milliseconds() -> None:
    assert parse_taobao_line("1,2268318,2520377,pv,1511544070\n") == BehaviorEvent(
        1, 2268318, 2520377, "pv", 1511544070000
    )


def test_bad_rows_are_counted_with_reasons_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text(
        "1,2,3,pv,1511544070\n"
        "1,2,3,click,1511544070\n"
        "1,2,3\n"
        "x,2,3,pv,1511544070\n"
        "\n"
        "4,5,6,buy,1511544071\n"
        "0,5,6,buy,1511544071\n"
    )
    audit = RowAudit()
    events = list(read_taobao(path, audit))
    assert [e.user_id for e in events] == [1, 4]
    assert audit.rows == 6
    assert audit.bad_rows == 4
    assert "expected 5 columns, got 3" in audit.bad
    assert "non-integer id or timestamp" in audit.bad
    assert any("behavior" in reason for reason in audit.bad)
    assert "line 2" in audit.examples[0]


def test_reads_the_whole_real_stream_file() -> None:
    audit = RowAudit()
    events = list(read_dataset("taobao", requirements.dataset("taobao"), audit))
    assert len(events) == 110_300
    assert audit.bad_rows == 0
    assert events == sorted(events, key=lambda e: e.ts), "the stream file is time-ordered"
