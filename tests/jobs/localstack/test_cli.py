from pathlib import Path

import pytest

from jobs.localstack import ServiceStatus
from jobs.localstack.cli import build_parser, format_parts, format_table, main


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
    assert lines[0].split() == ["SERVICE", "STATE", "PID", "ENDPOINT", "METRICS", "LOG"]
    assert lines[1].split()[:4] == ["kafka", "healthy", "42", "127.0.0.1:9092"]
    assert lines[2].split()[:3] == ["redis", "stopped", "-"]


def test_status_and_down_on_an_empty_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    assert main(["down"]) == 0
    assert main(["status"]) == 1
    out = capsys.readouterr().out
    assert "stopped" in out
    # Every part's metrics endpoint is listed, running or not.
    assert "worker   http://127.0.0.1:9108/metrics  not running" in out


def test_the_parts_table_follows_moved_ports_and_leaves_out_parts_turned_off() -> None:
    environ = {"STREAMREC_WORKER_METRICS_PORT": "19108", "STREAMREC_DRIFT_METRICS_PORT": "0"}
    table = format_parts({"worker": True}, environ).splitlines()
    assert table[0].split() == ["PART", "METRICS", "STATE"]
    assert table[1].split() == ["worker", "http://127.0.0.1:19108/metrics", "answering"]
    assert [line.split()[0] for line in table[1:]] == ["worker", "canary", "outcome", "writer"]


def test_status_of_the_default_services_passes_with_prometheus_never_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Named, a stopped Prometheus is a failure; among the defaults it is optional.
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    assert main(["status", "--services", "prometheus"]) == 1
    assert "prometheus" in capsys.readouterr().out


def test_errors_are_one_clear_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path))
    assert main(["up", "--services", "zookeeper"]) == 2
    assert "error: unknown service(s) zookeeper" in capsys.readouterr().err
