"""Building the job's Java functions (``udf/``) with Maven, once per version of their source."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from jobs.features.errors import DependencyError
from jobs.features.maven import find_mvn
from schemas.files import file_lock

SOURCE_DIR = Path(__file__).with_name("udf")
JAR_NAME = "streamrec-flink-functions.jar"


def source_digest(source: Path = SOURCE_DIR) -> str:
    """A hash of the pom and every Java file: a changed source gets a new build folder."""
    digest = hashlib.sha256()
    for path in sorted([source / "pom.xml", *source.rglob("*.java")]):
        digest.update(path.relative_to(source).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def functions_jar(cache_dir: Path, source: Path = SOURCE_DIR) -> Path:
    """The functions jar for the current sources, built on first use (about 5 s)."""
    # Absolute: Maven resolves a relative build directory against the pom's folder.
    build_dir = cache_dir.resolve() / "flink-functions" / source_digest(source)
    jar = build_dir / JAR_NAME
    if jar.exists():
        return jar
    build_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(build_dir / ".lock"):
        if not jar.exists():
            _build(source, build_dir)
    return jar


def _build(source: Path, build_dir: Path) -> None:
    argv = [find_mvn(), "-q", "-B", "-f", str(source / "pom.xml"), "package"]
    argv.append(f"-Dbuild.dir={build_dir}")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not (build_dir / JAR_NAME).exists():
        output = (result.stdout + result.stderr)[-3000:]
        raise DependencyError(f"building the feature job's Java functions failed:\n{output}")
