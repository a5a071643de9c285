"""The profile's arithmetic and its reading of /proc (a fake one), without a JVM."""

from __future__ import annotations

import os
from pathlib import Path

from tests.benchmarks.thread_cpu import (
    Sample,
    cpu_between,
    descendant_named,
    group_of,
    read_threads,
    within,
)


def test_numbered_threads_fold_into_one_group() -> None:
    assert group_of("GC Thread#3") == group_of("GC Thread#0") == "GC Thread"
    assert group_of("C2 CompilerThre") == "C2 CompilerThre"
    assert group_of("42") == "42"


def test_cpu_between_differences_each_thread_and_counts_a_new_one_whole() -> None:
    first = Sample(0.0, {1: ("GC Thread#0", 2.0), 2: ("item windows -", 5.0)})
    last = Sample(10.0, {1: ("GC Thread#0", 3.0), 2: ("item windows -", 9.0),
                         3: ("GC Thread#1", 0.5)})  # fmt: skip
    assert cpu_between(first, last) == [("item windows -", 4.0), ("GC Thread", 1.5)]


def test_the_span_is_sampled_from_inside() -> None:
    samples = [Sample(float(t), {}) for t in (0, 1, 2, 3, 4)]
    span = within(samples, 0.5, 3.5)
    assert span is not None and (span[0].at, span[1].at) == (1.0, 3.0)
    assert within(samples, 0.5, 1.5) is None


def fake_stat(proc: Path, pid: int, name: str, ppid: int, cpu_ticks: tuple[int, int] = (0, 0),
              tid: int | None = None) -> None:  # fmt: skip
    rest = ["S", str(ppid)] + ["0"] * 9 + [str(cpu_ticks[0]), str(cpu_ticks[1])] + ["0"] * 5
    stat = f"{tid or pid} ({name}) {' '.join(rest)}\n"
    folder = proc / str(pid) if tid is None else proc / str(pid) / "task" / str(tid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stat").write_text(stat)


def test_the_jvm_is_found_below_the_job_and_its_threads_read(tmp_path: Path) -> None:
    fake_stat(tmp_path, 10, "python", 1)
    fake_stat(tmp_path, 11, "python3", 10)
    fake_stat(tmp_path, 12, "java", 11)
    fake_stat(tmp_path, 20, "java", 1)  # another JVM, not ours
    assert descendant_named(10, "java", tmp_path) == 12
    assert descendant_named(99, "java", tmp_path) is None
    (tmp_path / "12" / "cmdline").write_bytes(b"java\0-cp\0x.jar\0kafka.Kafka\0")
    (tmp_path / "14").mkdir()
    fake_stat(tmp_path, 14, "java", 10)
    (tmp_path / "14" / "cmdline").write_bytes(b"java\0-c\0org.example.Gateway\0")
    assert descendant_named(10, "java", tmp_path, command_has="org.example.Gateway") == 14
    fake_stat(tmp_path, 12, "C2 CompilerThre", 11, (150, 50), tid=13)
    threads = read_threads(12, tmp_path)
    assert threads[13][0] == "C2 CompilerThre"
    assert threads[13][1] == 200 / os.sysconf("SC_CLK_TCK")
