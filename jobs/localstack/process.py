"""Generic management of long-running service processes: spawn, pidfiles, identity, stop.

Nothing here knows about Kafka or Redis. A process is "ours" only if its pidfile
names it *and* its /proc/<pid>/cmdline contains a marker (a path inside the stack
home): pids are recycled, and a stale pidfile must never make us signal a stranger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from runtime.online.feast_environment import without_feast_metrics

_POLL_S = 0.1


def read_cmdline(pid: int, proc: Path = Path("/proc")) -> str:
    """The process's argv joined by spaces; "" if it is gone or a zombie (whose argv is empty)."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")


def process_state(pid: int, proc: Path = Path("/proc")) -> str:
    """The one-letter state of `pid` (R, S, D, Z, ...); "" if there is no such process."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return ""
    # The command name in parentheses may contain spaces; the state follows it.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[0] if fields else ""


def is_ours(pid: int, marker: str, proc: Path = Path("/proc"), settle_s: float = 5.0) -> bool:
    """True if `pid` runs and its command line carries `marker`.

    A live process shows an empty command line for a moment inside every exec (the
    kernel installs the new memory before the new argv), and a launcher such as
    `nice` execs a second time after spawn() saw the first one through. So an empty
    command line of a process that is not a zombie is read again for up to
    `settle_s` before it counts as not ours. Seconds, not one: on a CI box with both
    cores busy, a Redis just spawned was once judged gone during startup with not a
    line in its log, which it writes first thing (1 s was the bound then).
    """
    if pid <= 0:
        return False
    deadline = time.monotonic() + settle_s
    while True:
        cmdline = read_cmdline(pid, proc)
        if cmdline:
            return marker in cmdline
        if process_state(pid, proc) in ("", "Z", "X") or time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S / 20)


def read_pidfile(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def running_pid(pidfile: Path, marker: str) -> int | None:
    """The pid recorded in `pidfile` if that process is still ours; clears a stale pidfile."""
    pid = read_pidfile(pidfile)
    if pid is None:
        return None
    if is_ours(pid, marker):
        return pid
    _reap(pid)
    pidfile.unlink(missing_ok=True)
    return None


def spawn(
    argv: Sequence[str], log_path: Path, pidfile: Path, env: Mapping[str, str] | None = None
) -> int:
    """Start `argv` detached in its own session, output appended to `log_path`; records the pid.

    posix_spawn rather than subprocess.Popen: the process must outlive the CLI that
    started it, and a Popen object dropped while its child runs only produces warnings.
    setsid gives it its own process group, so stop() can signal everything it forks.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log_path), flags, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    # Not Feast's metrics directory: a part started from a process that imported Feast
    # would keep its metrics in mmap files (runtime.online.feast_environment).
    environ = without_feast_metrics(os.environ if env is None else env)
    pid = os.posix_spawn(argv[0], list(argv), environ, file_actions=actions, setsid=True)
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    pidfile.write_text(f"{pid}\n")
    _wait_exec(pid)
    return pid


def lower_session_priority(pid: int, niceness: int, proc: Path = Path("/proc")) -> bool:
    """Lower the CPU share of ``pid``'s whole session against other sessions; False where
    the kernel has no autogroups (nice alone then does it) or refuses.

    spawn() starts each process in a session of its own, and with autogroup scheduling
    (``kernel.sched_autogroup_enabled``, on by default) the scheduler first shares the
    cores equally between sessions: ``nice`` then only orders a session's own threads,
    and a niced JVM still takes as much as the request path. The session's autogroup
    has a nice value of its own, which any process may raise for its own sessions.
    """
    try:
        (proc / str(pid) / "autogroup").write_text(f"{niceness}\n")
    except OSError:
        return False
    return True


def _wait_exec(pid: int, timeout_s: float = 5.0) -> None:
    # Right after posix_spawn returns, /proc/<pid>/cmdline can still be empty while the
    # kernel finishes exec; is_ours() would then take the new process for a dead one.
    deadline = time.monotonic() + timeout_s
    while not read_cmdline(pid) and time.monotonic() < deadline:
        _reap(pid)
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.01)


def stop(pid: int, marker: str, timeout_s: float) -> None:
    """SIGTERM the process group, wait up to `timeout_s`, then SIGKILL what is left."""
    if not is_ours(pid, marker):
        _reap(pid)
        return
    _signal_group(pid, signal.SIGTERM)
    if not wait_gone(pid, marker, timeout_s):
        _signal_group(pid, signal.SIGKILL)
        wait_gone(pid, marker, 5.0)
    # Children the leader forked (e.g. a redis save) share its group; sweep them too.
    # The leader just died, so its group id cannot have been reused yet.
    if group_members(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _wait_group_gone(pid, 5.0)


def process_stats(proc: Path = Path("/proc")) -> Iterator[tuple[int, str]]:
    """``(pid, /proc/<pid>/stat text)`` of every process that still exists when read."""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            yield int(entry.name), (entry / "stat").read_text()
        except OSError:
            continue


def group_members(pgid: int, proc: Path = Path("/proc")) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`."""
    members = []
    for pid, stat in process_stats(proc):
        # The command name in parentheses may contain spaces; the fields after it
        # are: state, ppid, pgrp, ...
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members.append(pid)
    return members


def _wait_group_gone(pgid: int, timeout_s: float) -> None:
    # SIGKILL is delivered asynchronously; return only once nothing is left.
    deadline = time.monotonic() + timeout_s
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(_POLL_S / 10)


def wait_gone(pid: int, marker: str, timeout_s: float) -> bool:
    """Poll until `pid` is no longer ours; reaps it if it was our child. False on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        _reap(pid)
        if not is_ours(pid, marker):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # spawn() made the service a session leader (pgid == pid). Anything else came
    # from outside (a hand-edited pidfile), so signal only that single process.
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    # When the process was started by this very Python process (tests, a long `up`),
    # it stays a zombie until waited for; for anyone else's child this is a no-op.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def answers_http(url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``url`` answers 200 now (a health or /metrics probe; never raises)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def port_in_use(host: str, port: int) -> bool:
    """True if something accepts connections on host:port (checked before we start a service)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def tail(path: Path, lines: int = 30, max_bytes: int = 16_384) -> str:
    """The last `lines` lines of a log file, or "" if it does not exist (for error messages)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return ""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])
