"""The Java functions' own unit tests (``udf/src/test``), run by Maven's surefire."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.features.functions_jar import SOURCE_DIR
from jobs.features.maven import find_mvn

pytestmark = pytest.mark.integration  # Maven, and JUnit from the Maven repository


def test_the_window_arithmetic_passes_its_java_unit_tests(tmp_path: Path) -> None:
    result = subprocess.run(
        [find_mvn(), "-q", "-B", "-f", str(SOURCE_DIR / "pom.xml"), "test",
         f"-Dbuild.dir={tmp_path}"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    reports = list((tmp_path / "surefire-reports").glob("TEST-*.xml"))
    # Surefire ran the tests (a pom that skipped them would leave no report).
    assert [r.name for r in reports] == ["TEST-io.streamrec.flink.SlicingTest.xml"]
    assert 'tests="6"' in reports[0].read_text() and 'failures="0"' in reports[0].read_text()
