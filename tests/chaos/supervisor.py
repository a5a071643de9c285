"""A supervisor for the pipeline's parts, as a deployment's restart policy would be.

It restarts any part that exits. An exit with the worker's restart code (75:
the process chose to end so that a fresh one resumes cleanly) is a restart; any
other exit of a part nobody asked to stop is a crash, recorded with its code.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from jobs.demo.processes import Part
from jobs.localstack.process import group_members, tail
from runtime.kafka import EXIT_RESTART

POLL_S = 0.5


class Supervisor(threading.Thread):
    def __init__(self, env: Mapping[str, str]) -> None:
        super().__init__(daemon=True, name="supervisor")
        self.env = dict(env)
        self.parts: list[Part] = []
        self.crashed: list[str] = []
        self.restarts = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def start_part(self, part: Part) -> None:
        with self._lock:
            part.start(self.env)
            self.parts.append(part)

    def release(self, part: Part) -> Part:
        """Stop watching ``part`` (the caller is about to stop or kill it)."""
        with self._lock:
            self.parts.remove(part)
        return part

    def run(self) -> None:
        while not self._stopping.wait(POLL_S):
            with self._lock:
                for part in list(self.parts):
                    code = exit_code(part)
                    if code is None:
                        continue
                    if code == EXIT_RESTART:
                        self.restarts += 1
                    else:
                        self.crashed.append(f"{part.name}: exit {code}\n{tail(part.log_path)}")
                    part.start(self.env)

    def stop(self) -> list[Part]:
        """Stop supervising; returns the parts still running, for the caller to stop."""
        self._stopping.set()
        if self.is_alive():
            self.join()
        return list(self.parts)


@contextmanager
def supervised(env: Mapping[str, str], parts: Sequence[Part]) -> Iterator[Supervisor]:
    """``parts`` started; however the block ends, supervision stops and every part the
    supervisor still holds is stopped (SIGTERM, then SIGKILL), last started first.
    The caller starts the supervising thread once the parts are ready."""
    supervisor = Supervisor(env)
    try:
        for part in parts:
            supervisor.start_part(part)
        yield supervisor
    finally:
        for part in reversed(supervisor.stop()):
            part.stop()


def exit_code(part: Part) -> int | None:
    """The part's exit status if it has exited (it is this process's child), else None."""
    if part.pid is None:
        return None
    try:
        pid, status = os.waitpid(part.pid, os.WNOHANG)
    except ChildProcessError:
        return -1  # reaped elsewhere: gone, status unknown
    if pid == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def kill(part: Part) -> None:
    """SIGKILL the part's whole process group: no chance to commit, flush or abort."""
    if part.pid is None:
        return
    os.killpg(part.pid, signal.SIGKILL)
    os.waitpid(part.pid, 0)
    deadline = time.monotonic() + 10
    while group_members(part.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    part.pid = None
