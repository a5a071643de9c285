"""Jars the feature job needs, fetched once into the cache with Maven.

The Kafka SQL connector travels in ``pipeline.jars`` with the job (the client
ships it), whether it runs in a local mini-cluster or on a Flink cluster, so
the cluster's own lib/ stays untouched. The job's Java functions are built
from ``udf/`` by :mod:`jobs.features.functions_jar` with the same Maven.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from jobs.features.errors import DependencyError
from runtime.files import file_lock

log = logging.getLogger(__name__)

# The shaded SQL connector bundles kafka-clients and everything else it needs, so
# one artifact without its transitive dependencies is the whole classpath.
KAFKA_CONNECTOR = ("org.apache.flink", "flink-sql-connector-kafka", "5.0.0-2.2")
# Where that jar relocated kafka-clients' classes: class names in properties (the JAAS
# login module) must carry it, or the shaded client finds no such class.
KAFKA_CONNECTOR_RELOCATION = "org.apache.flink.kafka.shaded."


def find_mvn(which: Callable[[str], str | None] = shutil.which) -> str:
    found = which("mvn")
    if found is None:
        raise DependencyError(
            "mvn not found: jars are fetched from Maven Central and built with Maven. "
            "Install it, e.g. `apt-get install -y maven`."
        )
    return found


def render_pom(group: str, artifact: str, version: str) -> str:
    """A pom that only declares one dependency; packaging "pom" builds nothing."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by streamrec to fetch {artifact} with mvn; safe to delete. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamrec.fetch</groupId>
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


def connectors_dir(cache_dir: Path) -> Path:
    return cache_dir / "flink-connectors"


def kafka_connector_jar(cache_dir: Path) -> Path:
    """The path of the Flink Kafka SQL connector jar, downloading it on first use."""
    group, artifact, version = KAFKA_CONNECTOR
    return fetch_jar(connectors_dir(cache_dir), group, artifact, version)


def fetch_jar(folder: Path, group: str, artifact: str, version: str) -> Path:
    """`<folder>/<artifact>-<version>.jar`, fetched with Maven unless already complete."""
    # Absolute: Maven resolves a relative output directory against the pom's folder.
    folder = folder.resolve()
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
        mvn = find_mvn()
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
            raise DependencyError(
                f"fetching {group}:{artifact}:{version} with Maven failed "
                f"(exit {result.returncode}; expected {jar}):\n{output}"
            )
        shutil.rmtree(work, ignore_errors=True)
        marker.write_text(f"{group}:{artifact}:{version}\n")
    return jar
