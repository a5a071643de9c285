"""The Java functions' own unit tests (``udf/src/test``), run by Maven's surefire."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.features.functions_jar import SOURCE_DIR
from jobs.features.maven import find_mvn

pytestmark = pytest.mark.integration  # Maven, and JUnit from the Maven repository


# Each test class and its number of tests: a class left out of the run fails the count.
JAVA_TESTS = {
    "SlicingTest": 6,
    "RecentEventsFunctionTest": 7,
    "ChangelogRecordTest": 5,
    "BehaviorEventParserTest": 4,
    "SlicedWindowFunctionTest": 9,
    "DueWindowsTest": 2,
    "ParseBehaviorEventTest": 3,
}


def test_the_java_functions_pass_their_unit_tests(tmp_path: Path) -> None:
    result = subprocess.run(
        [find_mvn(), "-q", "-B", "-f", str(SOURCE_DIR / "pom.xml"), "test",
         f"-Dbuild.dir={tmp_path}"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    reports = {r.name.removeprefix("TEST-io.streamrec.flink.").removesuffix(".xml"): r.read_text()
               for r in (tmp_path / "surefire-reports").glob("TEST-*.xml")}  # fmt: skip
    # Surefire ran the tests (a pom that skipped them would leave no report).
    assert sorted(reports) == sorted(JAVA_TESTS)
    for name, count in JAVA_TESTS.items():
        assert f'tests="{count}"' in reports[name] and 'failures="0"' in reports[name], name
