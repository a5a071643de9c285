"""Samples what a soak watches, every ``every_s``: memory of every process and store.

Memory is summed over a process's whole group (a part spawns children: the feature
job its JVM, Triton its python-backend stubs), read from ``/proc``, as PSS: a page
shared by several processes counts once in total, so a forked child (Redis's AOF
rewrite) does not count the parent's pages again, as summed RSS would. Redis reports
``used_memory``; the Flink state size is the newest checkpoint's size on disk;
Triton's queue is ``nv_inference_pending_request_count`` from its metrics.

The JVMs (the broker, the feature job) commit their whole heap at start, so
their RSS stays flat while the heap fills; what lives on the heap is sampled
apart, as the old generation's occupancy from ``jstat``, so a heap that fills
toward its cap shows as its own series rather than hiding behind a flat RSS.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import redis

from jobs.features.checkpoints import latest_checkpoint
from jobs.localstack.process import group_members
from runtime.online.connect import connect
from tests.chaos.growth import Sample

MB = 1024 * 1024


def group_memory_mb(pid: int) -> float:
    """The PSS of ``pid``'s process group, in MB."""
    total_kb = 0
    for member in group_members(pid) or [pid]:
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue  # gone between the listing and the read
        total_kb += pss_kb(rollup)
    return total_kb / 1024


def pss_kb(rollup: str) -> int:
    """The ``Pss:`` line of a ``smaps_rollup`` (0 when absent)."""
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def old_generation_mb(pid: int) -> float:
    """The old generation in use in the JVM of ``pid``'s group (NaN: none, or no ``jstat``)."""
    jstat = shutil.which("jstat")
    for member in group_members(pid) or [pid]:
        try:
            name = Path(f"/proc/{member}/comm").read_text().strip()
        except OSError:
            continue
        if name != "java" or jstat is None:
            continue
        try:
            out = subprocess.run(
                [jstat, "-gc", str(member)], capture_output=True, text=True, timeout=10
            ).stdout.split("\n")
        except (OSError, subprocess.TimeoutExpired):
            return float("nan")
        return parse_jstat_old_used_mb(out)
    return float("nan")


def parse_jstat_old_used_mb(lines: list[str]) -> float:
    """``OU`` (KB) of ``jstat -gc``'s header and value lines, in MB."""
    rows = [line.split() for line in lines if line.strip()]
    if len(rows) < 2 or "OU" not in rows[0]:
        return float("nan")
    return float(rows[1][rows[0].index("OU")]) / 1024


def directory_mb(path: Path | None) -> float:
    if path is None or not path.exists():
        return 0.0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / MB


def triton_pending(metrics_url: str) -> float:
    try:
        with urllib.request.urlopen(f"{metrics_url}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return float("nan")
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_inference_pending_request_count{")
    )


class Sampler(threading.Thread):
    """``series[name]`` grows by one :data:`Sample` per process and gauge every tick."""

    def __init__(
        self,
        processes: Mapping[str, Callable[[], int | None]],  # name → current pid
        redis_url: str,
        checkpoint_dir: Path,
        triton_metrics_url: str,
        every_s: float = 30.0,
        jvms: frozenset[str] = frozenset(),  # the processes whose JVM heap is sampled too
    ) -> None:
        super().__init__(daemon=True, name="sampler")
        self.processes = processes
        self.client = connect(redis_url, socket_timeout=5)
        self.checkpoint_dir = checkpoint_dir
        self.triton_metrics_url = triton_metrics_url
        self.every_s = every_s
        self.jvms = jvms
        self.series: dict[str, list[Sample]] = {}
        self._began = time.monotonic()
        self._stopping = threading.Event()

    def run(self) -> None:
        while True:
            self.sample()
            if self._stopping.wait(self.every_s):
                return

    def sample(self) -> None:
        minute = (time.monotonic() - self._began) / 60
        for name, pid_of in self.processes.items():
            pid = pid_of()
            if pid is not None:
                self._add(f"pss {name}", minute, group_memory_mb(pid), pid)
                if name in self.jvms:
                    self._add(f"heap-old {name}", minute, old_generation_mb(pid), pid)
        try:
            info: dict[str, Any] = self.client.info("memory")  # type: ignore[assignment]
            used = float(info["used_memory"]) / MB
        except redis.RedisError:
            used = float("nan")  # Redis being restarted: a gap, not a zero
        self._add("redis used_memory", minute, used, 0)
        self._add(
            "flink checkpoint", minute, directory_mb(latest_checkpoint(self.checkpoint_dir)), 0
        )
        self._add("triton queue", minute, triton_pending(self.triton_metrics_url), 0)

    def _add(self, name: str, minute: float, value: float, pid: int) -> None:
        if value == value:  # NaN: no reading this time
            self.series.setdefault(name, []).append((minute, value, pid))

    def stop(self) -> dict[str, list[Sample]]:
        self._stopping.set()
        self.join()
        self.client.close()
        return self.series
