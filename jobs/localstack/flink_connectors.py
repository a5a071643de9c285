"""Flink connector jars the PyFlink jobs pass in `pipeline.jars`, fetched once into the cache.

The jobs run both in a local mini-cluster and on the stack's standalone cluster;
either way the jar travels with the job (the client ships it), so the cluster's own
lib/ (inside the installed wheel) stays untouched.
"""

from __future__ import annotations

import fcntl
import logging
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jobs.localstack import binaries
from jobs.localstack.errors import StackError
from jobs.localstack.settings import StackSettings

log = logging.getLogger(__name__)

# The shaded SQL connector bundles kafka-clients and everything else it needs, so
# one artifact without its transitive dependencies is the whole classpath.
KAFKA_CONNECTOR = ("org.apache.flink", "flink-sql-connector-kafka", "5.0.0-2.2")


def render_pom(group: str, artifact: str, version: str) -> str:
    """A pom that only declares one dependency; packaging "pom" builds nothing."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by jobs.localstack to fetch {artifact} with mvn; safe to delete. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamrec.localstack</groupId>
  <artifactId>{artifact}-fetch</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def connectors_dir(settings_or_cache_dir: StackSettings | Path) -> Path:
    cache = (
        settings_or_cache_dir.cache_dir
        if isinstance(settings_or_cache_dir, StackSettings)
        else settings_or_cache_dir
    )
    return cache / "flink-connectors"


def kafka_connector_jar(settings_or_cache_dir: StackSettings | Path) -> Path:
    """The path of the Flink Kafka SQL connector jar, downloading it on first use."""
    group, artifact, version = KAFKA_CONNECTOR
    return fetch_jar(connectors_dir(settings_or_cache_dir), group, artifact, version)


def fetch_jar(folder: Path, group: str, artifact: str, version: str) -> Path:
    """`<folder>/<artifact>-<version>.jar`, fetched with Maven unless already complete."""
    jar = folder / f"{artifact}-{version}.jar"
    # The marker is written last: a jar without it may be a half-finished download.
    marker = folder / f".{artifact}-{version}.complete"
    if marker.exists() and jar.exists():
        return jar
    folder.mkdir(parents=True, exist_ok=True)
    # Tests and jobs may ask at the same moment; one fetches, the others wait for it.
    with file_lock(folder / ".lock"):
        if marker.exists() and jar.exists():
            return jar
        mvn = binaries.find_mvn()
        log.info("fetching %s:%s:%s from Maven Central into %s", group, artifact, version, folder)
        jar.unlink(missing_ok=True)
        # One work folder per artifact: Maven writes target/ next to the pom.
        work = folder / f".{artifact}-{version}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        pom = work / "pom.xml"
        pom.write_text(render_pom(group, artifact, version))
        argv = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies"]
        argv += [f"-DoutputDirectory={folder}", "-DexcludeTransitive=true"]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not jar.exists():
            output = (result.stdout + result.stderr)[-3000:]
            raise StackError(
                f"fetching {group}:{artifact}:{version} with Maven failed "
                f"(exit {result.returncode}; expected {jar}):\n{output}"
            )
        shutil.rmtree(work, ignore_errors=True)
        marker.write_text(f"{group}:{artifact}:{version}\n")
    return jar


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
