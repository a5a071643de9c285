from pathlib import Path

import pytest

from jobs.localstack import ServiceStatus
from jobs.localstack.cli import build_parser, format_table, main


def test_services_option_and_help() -> None:
    args = build_parser().parse_args(["up", "--services", "kafka,redis", "--timeout", "30"])
    assert (args.command, args.services, args.timeout) == ("up", "kafka,redis", 30.0)
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--help"])
    assert exit_info.value.code == 0


def test_table_shows_state_and_endpoint(tmp_path: Path) -> None:
    rows = [
        ServiceStatus("kafka", True, True, 42, "127.0.0.1:9092", tmp_path / "k.log"),
        ServiceStatus("redis", False, False, None, "redis://127.0.0.1:6379/0", tmp_path / "r"),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["SERVICE", "STATE", "PID", "ENDPOINT", "LOG"]
    assert lines[1].split()[:4] == ["kafka", "healthy", "42", "127.0.0.1:9092"]
    assert lines[2].split()[:3] == ["redis", "stopped", "-"]


def test_status_and_down_on_an_empty_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    assert main(["down"]) == 0
    assert main(["status"]) == 1
    assert "stopped" in capsys.readouterr().out


def test_errors_are_one_clear_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    assert main(["up", "--services", "zookeeper"]) == 2
    assert "error: unknown service(s) zookeeper" in capsys.readouterr().err
