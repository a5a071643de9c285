"""Building and reading ``flink run`` for a Python module (no Flink started)."""

import sys
import zipfile
from pathlib import Path

import pytest

from jobs.features import flink_client as fc
from jobs.features.errors import SubmissionError

JOB = "0fcc306ede87cbd130736248a5e38c4c"


def test_run_command_is_detached_python_module_with_our_interpreter(tmp_path: Path) -> None:
    pyfiles = [tmp_path / "a.zip", tmp_path / "b.py"]
    argv = fc.build_run_command("127.0.0.1:18081", "jobs.features.job", ["--rows", "5"], pyfiles)
    assert argv[:2] == [str(fc.flink_home() / "bin" / "flink"), "run"]
    assert argv[2:5] == ["-m", "127.0.0.1:18081", "-d"]
    assert argv[argv.index("-pyclientexec") + 1] == sys.executable
    assert argv[argv.index("-pyexec") + 1] == sys.executable
    assert argv[argv.index("-pyfs") + 1] == f"{tmp_path}/a.zip,{tmp_path}/b.py"
    assert argv[-5:] == ["-pym", "jobs.features.job", "--", "--rows", "5"]
    assert "-pyfs" not in fc.build_run_command("127.0.0.1:18081", "m", [], [])


def test_job_id_is_parsed_from_the_cli_output() -> None:
    output = f"some log line\nJob has been submitted with JobID {JOB}\n"
    assert fc.parse_job_id(output) == JOB
    with pytest.raises(SubmissionError, match=r"(?s)printed no job id.*Traceback: boom"):
        fc.parse_job_id("Traceback: boom\n")


def test_zip_packages_makes_them_importable_from_the_zip_root(tmp_path: Path) -> None:
    for name in ("pkg/__init__.py", "pkg/sub/mod.py", "pkg/__pycache__/x.pyc", "other/y.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    archive = fc.zip_packages(tmp_path, ["pkg"], tmp_path / "out" / "src.zip")
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == ["pkg/__init__.py", "pkg/sub/mod.py"]
