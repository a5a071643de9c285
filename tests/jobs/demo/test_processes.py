"""The demo's parts: the feature path starts at a lower CPU priority than the request path."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

from jobs.demo.loop import (
    FEATURE_PATH_NICENESS,
    RunTopics,
    feature_job_part,
    pipeline_parts,
    run_project,
    writer_part,
)
from jobs.demo.processes import Part
from schemas.views import PROJECT


def test_the_feature_path_parts_are_niced_and_a_plain_part_is_not(tmp_path: Path) -> None:
    for part in (feature_job_part("e", "c", "g", tmp_path), writer_part("c", "g", tmp_path)):
        assert Path(part.argv[0]).name == "nice"
        assert part.argv[1:3] == ["-n", str(FEATURE_PATH_NICENESS)]
        assert part.argv[3:5] == [sys.executable, "-m"]
    assert Part("p", "json.tool", [], tmp_path).argv[0] == sys.executable


def test_a_niced_part_runs_at_that_niceness(tmp_path: Path) -> None:
    part = Part("sleeper", "http.server", ["--bind", "127.0.0.1", "0"], tmp_path, niceness=7)
    part.start(os.environ)
    try:
        assert part.pid is not None
        deadline = time.monotonic() + 10
        # nice's own command line names the module too: wait for the exec into python.
        while time.monotonic() < deadline and not _cmdline(part.pid).startswith(sys.executable):
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, part.pid) == os.getpriority(os.PRIO_PROCESS, 0) + 7
        # Its session's autogroup too, where the kernel schedules by autogroup.
        autogroup = Path(f"/proc/{part.pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "7"
            # A process in the kernel's default autogroup (one started outside any session,
            # as under a CI runner) reads an empty file: the part's group differs from it too.
            assert autogroup.read_text().split()[0] != _autogroup_name(Path("/proc/self/autogroup"))
        assert part.alive
    finally:
        part.stop()


def _autogroup_name(path: Path) -> str:
    fields = path.read_text().split()
    return fields[0] if fields else ""


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_each_part_consumes_in_its_own_group(tmp_path: Path) -> None:
    topics = RunTopics.for_run("run")
    parts = pipeline_parts(topics, "run", tmp_path, tmp_path, worker_metrics_port=1)
    groups = [part.argv[part.argv.index("--group-id") + 1] for part in parts]
    assert len(set(groups)) == len(parts)
    assert all(group.startswith("run.") for group in groups)


def test_the_writer_serves_metrics_only_where_asked(tmp_path: Path) -> None:
    def port_of(part: Part) -> str:
        return part.argv[part.argv.index("--metrics-port") + 1]

    # 0 (no /metrics): several writers, or a writer killed and restarted, never collide.
    assert port_of(writer_part("c", "g", tmp_path)) == "0"
    topics = RunTopics.for_run("run")
    parts = pipeline_parts(topics, "run", tmp_path, tmp_path, 1, writer_metrics_port=2)
    assert [port_of(p) for p in parts if p.name != "feature-job"] == ["2", "1"]


def test_each_run_writes_and_reads_a_feast_project_of_its_own(tmp_path: Path) -> None:
    project = run_project("demo-20261203-110000")
    assert re.fullmatch(r"\w+", project) and project != PROJECT
    assert project != run_project("demo-20261203-110001")
    parts = pipeline_parts(RunTopics.for_run("run"), "run", tmp_path, tmp_path, 1, 2, project)
    for part in parts[1:]:
        assert part.argv[part.argv.index("--project") + 1] == project
    assert "--project" not in parts[0].argv  # the feature job never reaches the store
