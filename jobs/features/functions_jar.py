"""Building the job's Java functions (``udf/``) with Maven, once per version of their source."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path

from jobs.features.errors import DependencyError
from jobs.features.maven import find_mvn
from runtime.files import file_lock

SOURCE_DIR = Path(__file__).with_name("udf")
JAR_NAME = "streamrec-flink-functions.jar"


def source_digest(source: Path = SOURCE_DIR, defines: Mapping[str, str] | None = None) -> str:
    """A hash of the pom, every Java file and resource, and the Maven ``defines``: a changed
    source (or version it is built against) gets a new build folder."""
    digest = hashlib.sha256()
    resources = sorted((source / "src" / "main" / "resources").rglob("*"))
    for path in sorted([source / "pom.xml", *source.rglob("*.java")]) + resources:
        if path.is_file():
            digest.update(path.relative_to(source).as_posix().encode())
            digest.update(path.read_bytes())
    for name, value in sorted((defines or {}).items()):
        digest.update(f"-D{name}={value}".encode())
    return digest.hexdigest()[:16]


def functions_jar(cache_dir: Path, source: Path = SOURCE_DIR) -> Path:
    """The functions jar for the current sources, built on first use (about 5 s)."""
    what = "the feature job's Java functions"
    return maven_jar(source, cache_dir / "flink-functions", JAR_NAME, what)


def maven_jar(
    source: Path,
    folder: Path,
    jar_name: str,
    what: str,
    defines: Mapping[str, str] | None = None,
) -> Path:
    """``<folder>/<digest>/<jar_name>``, built from the Maven project ``source`` unless there.

    ``defines`` are Maven properties (``-Dname=value``), e.g. the Flink version to
    build against; they are part of the digest.
    """
    # Absolute: Maven resolves a relative build directory against the pom's folder.
    build_dir = folder.resolve() / source_digest(source, defines)
    jar = build_dir / jar_name
    if jar.exists():
        return jar
    build_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(build_dir / ".lock"):
        if not jar.exists():
            _build(source, build_dir, jar_name, what, defines or {})
    return jar


def _build(
    source: Path, build_dir: Path, jar_name: str, what: str, defines: Mapping[str, str]
) -> None:
    # The Java unit tests run in the test suite (tests/jobs/features/test_java_units.py).
    argv = [find_mvn(), "-q", "-B", "-f", str(source / "pom.xml"), "package", "-DskipTests"]
    argv += [f"-D{name}={value}" for name, value in {**defines, "build.dir": build_dir}.items()]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not (build_dir / jar_name).exists():
        output = (result.stdout + result.stderr)[-3000:]
        raise DependencyError(f"building {what} failed:\n{output}")
