"""Per-thread CPU of a JVM from ``/proc`` samples, grouped into Flink tasks (pure but the sampler).

A Flink task runs in a thread named after its chain of operators; the JVM's own
work has threads of its own (the JIT compilers, the collector). Sampling each
thread's CPU time once a second and differencing over the span the job was
processing shows where the machine's cores went, per operator chain and per
JVM service: the profile ``make profile-features`` prints.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jobs.localstack.process import process_stats

# Thread names are cut to 15 characters by the kernel; numbered siblings
# ("GC Thread#0", "C2 CompilerThre") fold into one group.
_NUMBERED = re.compile(r"[#\d]+$")


@dataclass(frozen=True)
class Sample:
    at: float
    cpu_by_thread: dict[int, tuple[str, float]]  # tid -> (name, CPU seconds so far)


def group_of(name: str) -> str:
    return _NUMBERED.sub("", name).strip() or name


def cpu_between(first: Sample, last: Sample) -> list[tuple[str, float]]:
    """CPU seconds each thread group used between two samples (a thread born between: all),
    most first."""
    used: dict[str, float] = defaultdict(float)
    for tid, (name, cpu) in last.cpu_by_thread.items():
        before = first.cpu_by_thread.get(tid, (name, 0.0))[1]
        used[group_of(name)] += max(0.0, cpu - before)
    return sorted(used.items(), key=lambda item: -item[1])


def within(samples: Sequence[Sample], start: float, end: float) -> tuple[Sample, Sample] | None:
    """The first and the last sample inside ``[start, end]`` (a bounded job's threads are gone
    right after its last record), or None when fewer than two fall inside."""
    inside = [sample for sample in samples if start <= sample.at <= end]
    return (inside[0], inside[-1]) if len(inside) >= 2 else None


def descendant_named(
    root: int, name: str, proc: Path = Path("/proc"), command_has: str = ""
) -> int | None:
    """The pid of a process called ``name`` below ``root`` (any depth), if there is one.

    ``command_has``: only a process whose command line holds this text (the job's JVM
    and the broker's are both ``java`` below a benchmark that starts its own broker).
    """
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for pid, stat in process_stats(proc):
        names[pid] = stat[stat.index("(") + 1 : stat.rindex(")")]
        parents[pid] = int(stat[stat.rindex(")") + 2 :].split()[1])
    for pid, comm in names.items():
        if comm != name or command_has not in command_line(pid, proc):
            continue
        ancestor = parents.get(pid)
        while ancestor:
            if ancestor == root:
                return pid
            ancestor = parents.get(ancestor)
    return None


def command_line(pid: int, proc: Path = Path("/proc")) -> str:
    """The process's arguments joined by spaces ("" once it is gone)."""
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def read_threads(pid: int, proc: Path = Path("/proc")) -> dict[int, tuple[str, float]]:
    """``tid -> (name, user + system CPU seconds)`` of every thread of ``pid``."""
    tick = os.sysconf("SC_CLK_TCK")
    threads: dict[int, tuple[str, float]] = {}
    for task in (proc / str(pid) / "task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # ended between the listing and the read
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return threads


@dataclass
class ThreadSampler:
    """Samples the threads of the process ``find()`` names, in the background."""

    find: Callable[[], int | None]
    interval_s: float = 1.0
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> ThreadSampler:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            pid = self.find()
            if pid is None:
                continue
            try:
                self.samples.append(Sample(time.time(), read_threads(pid)))
            except OSError:
                continue  # the process ended
