"""The pid guard and process-group shutdown, on plain `sh`/`sleep` processes (no services)."""

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.localstack import process


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[str]:
    yield f"{tmp_path}/svc/"


def _spawn_sh(script: str, marker: str, tmp_path: Path) -> int:
    # The marker rides along as $0 of the shell, so it shows in /proc/<pid>/cmdline.
    argv = ["/bin/sh", "-c", script, marker]
    return process.spawn(argv, tmp_path / "svc" / "out.log", tmp_path / "svc" / "svc.pid")


def test_cmdline_of_this_process() -> None:
    assert "python" in process.read_cmdline(os.getpid())
    assert process.read_cmdline(2**22 + 1) == ""


def test_pid_without_the_marker_is_not_ours(marker: str) -> None:
    assert not process.is_ours(os.getpid(), marker)
    assert not process.is_ours(0, "")


def _fake_proc(tmp_path: Path, cmdline: bytes, state: str) -> Path:
    (tmp_path / "proc" / "42").mkdir(parents=True)
    (tmp_path / "proc" / "42" / "cmdline").write_bytes(cmdline)
    (tmp_path / "proc" / "42" / "stat").write_text(f"42 (py thon) {state} 1 42 42 0\n")
    return tmp_path / "proc"


def test_a_process_inside_exec_is_still_ours(tmp_path: Path) -> None:
    # Inside an exec the argv reads empty while the process runs; it shows up a moment later.
    proc = _fake_proc(tmp_path, b"", "R")
    later = threading.Timer(0.05, (proc / "42" / "cmdline").write_bytes, [b"python\0-m\0svc\0"])
    later.start()
    assert process.is_ours(42, "svc", proc)
    later.join()


def test_an_empty_argv_counts_as_gone_for_zombies_at_once_and_otherwise_after_the_settle_time(
    tmp_path: Path,
) -> None:
    zombie = _fake_proc(tmp_path / "z", b"", "Z")
    started = time.monotonic()
    assert not process.is_ours(42, "svc", zombie)
    assert time.monotonic() - started < 0.05
    assert process.process_state(42, zombie) == "Z"
    assert process.process_state(43, zombie) == ""
    stuck = _fake_proc(tmp_path / "k", b"", "S")  # a kernel thread never gets an argv
    assert not process.is_ours(42, "svc", stuck, settle_s=0.1)


def test_stale_pidfile_of_a_recycled_pid_is_cleared(tmp_path: Path, marker: str) -> None:
    # Our own pid stands in for a recycled one: alive, but without the marker.
    pidfile = tmp_path / "svc.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    assert process.running_pid(pidfile, marker) is None
    assert not pidfile.exists()


def test_garbage_or_missing_pidfile_means_not_running(tmp_path: Path, marker: str) -> None:
    assert process.running_pid(tmp_path / "missing.pid", marker) is None
    (tmp_path / "bad.pid").write_text("not a pid")
    assert process.running_pid(tmp_path / "bad.pid", marker) is None


def test_stop_takes_down_the_whole_process_group(tmp_path: Path, marker: str) -> None:
    pid = _spawn_sh("sleep 300 & sleep 300; wait", marker, tmp_path)
    assert process.running_pid(tmp_path / "svc" / "svc.pid", marker) == pid
    assert os.getpgid(pid) == pid
    process.stop(pid, marker, timeout_s=5)
    assert process.group_members(pid) == []


def test_stop_escalates_to_sigkill(tmp_path: Path, marker: str) -> None:
    # An ignored SIGTERM is inherited by the children too.
    pid = _spawn_sh("trap '' TERM; sleep 300 & wait", marker, tmp_path)
    process.stop(pid, marker, timeout_s=0.5)
    assert process.group_members(pid) == []
    assert process.running_pid(tmp_path / "svc" / "svc.pid", marker) is None


def test_stop_leaves_a_stranger_alone(marker: str) -> None:
    # A process whose command line lacks the marker (a reused pid) is not ours to stop.
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        process.stop(stranger.pid, marker, timeout_s=0.5)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_output_goes_to_the_log_and_tail_reads_it(tmp_path: Path, marker: str) -> None:
    pid = _spawn_sh("for i in 1 2 3 4 5; do echo line $i; done; echo oops >&2", marker, tmp_path)
    assert process.wait_gone(pid, marker, timeout_s=5)
    assert process.tail(tmp_path / "svc" / "out.log", lines=2) == "line 5\noops"
    assert process.tail(tmp_path / "missing.log") == ""


def test_a_part_does_not_inherit_feasts_metrics_directory(tmp_path: Path, marker: str) -> None:
    # A parent that imported Feast has these set; the part's prometheus_client would use mmaps.
    env = {"PROMETHEUS_MULTIPROC_DIR": "/tmp/feast_metrics_abc", "KEPT": "yes"}
    argv = ["/bin/sh", "-c", 'echo "[$PROMETHEUS_MULTIPROC_DIR] [$KEPT]"', marker]
    pid = process.spawn(argv, tmp_path / "svc" / "out.log", tmp_path / "svc" / "svc.pid", env)
    assert process.wait_gone(pid, marker, timeout_s=5)
    assert process.tail(tmp_path / "svc" / "out.log", lines=1) == "[] [yes]"


def test_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert process.port_in_use("127.0.0.1", port)
    assert not process.port_in_use("127.0.0.1", port)


def test_a_session_priority_is_lowered_where_autogroups_exist(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "autogroup").write_text("/autogroup-7 nice 0\n")
    assert process.lower_session_priority(42, 10, proc)
    assert (proc / "42" / "autogroup").read_text() == "10\n"
    assert not process.lower_session_priority(43, 10, proc)  # no such process, or no autogroups
