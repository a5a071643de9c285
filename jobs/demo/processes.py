"""The demo's long-running parts (feature job, writer, worker) as supervised child processes."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from jobs.localstack.process import is_ours, lower_session_priority, spawn, stop, tail

STOP_TIMEOUT_S = 30.0


class PartFailed(RuntimeError):
    """A pipeline part exited while the demo still needed it."""


class Part:
    """One ``python -m <module>`` process, logging to its own file, stopped with SIGTERM.

    ``env`` are this part's own variables, over the environment it is started with.
    ``niceness`` > 0 starts it (and every process and thread it starts) at a lower CPU
    priority, and lowers its session's autogroup as much (without that, a niced part
    in a session of its own still gets an equal share of the cores): on a box shared
    by the whole loop, the parts that only keep features fresh yield the cores to the
    request path.
    """

    def __init__(
        self,
        name: str,
        module: str,
        args: Sequence[str],
        log_dir: Path,
        env: Mapping[str, str] | None = None,
        niceness: int = 0,
    ) -> None:
        self.name = name
        self.env = dict(env or {})
        self.argv = [sys.executable, "-m", module, *args]
        self.niceness = niceness
        if niceness:
            self.argv = [shutil.which("nice") or "/usr/bin/nice", "-n", str(niceness), *self.argv]
        self.log_path = log_dir / f"{name}.log"
        self._pidfile = log_dir / f"{name}.pid"
        self._marker = module
        self.pid: int | None = None

    def start(self, env: Mapping[str, str]) -> None:
        self.pid = spawn(self.argv, self.log_path, self._pidfile, {**env, **self.env})
        if self.niceness:
            lower_session_priority(self.pid, self.niceness)

    @property
    def alive(self) -> bool:
        return self.pid is not None and is_ours(self.pid, self._marker)

    def check(self) -> None:
        if not self.alive:
            raise PartFailed(f"{self.name} exited; its log ends:\n{tail(self.log_path)}")

    def stop(self) -> None:
        """Graceful stop: SIGTERM lets it finish its batch and commit; SIGKILL after a timeout."""
        if self.pid is not None:
            stop(self.pid, self._marker, STOP_TIMEOUT_S)
            self._pidfile.unlink(missing_ok=True)
            self.pid = None


@contextmanager
def running(parts: Sequence[Part], env: Mapping[str, str]) -> Iterator[Sequence[Part]]:
    """Start ``parts`` in order; stop them in reverse order however the block ends."""
    with ExitStack() as stack:
        for part in parts:
            part.start(env)
            stack.callback(_stop_reporting, part)
        yield parts


def _stop_reporting(part: Part) -> None:
    started = time.perf_counter()
    part.stop()
    print(f"stopped {part.name} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
