"""Flink's metrics on a Prometheus endpoint bound to one address (local run, local cluster).

Flink's own ``PrometheusReporterFactory`` (``flink-metrics-prometheus``) has no host
option: its HTTP server binds every interface (``new InetSocketAddress(port)``).
``reporter/`` holds a small subclass, ``BoundPrometheusReporterFactory``, that takes a
``host`` as well; it is built with Maven against the installed wheel's Flink version
and runs next to ``flink-metrics-prometheus`` of that version, fetched from Maven
Central into the cache as the Kafka connector is. The metric names, labels and types
are Flink's (the same base class makes them).

Where Flink finds a reporter factory differs:

- a local run's mini-cluster starts no plugin manager (its log says "Available
  factories: []" for the stock one): it finds factories with Java's ServiceLoader on
  the thread's context class loader, to which PyFlink adds every ``pipeline.jars``
  entry, so both jars travel in ``pipeline.jars``;
- a standalone cluster's JobManager and TaskManager load reporters at start from
  ``$FLINK_PLUGINS_DIR/<plugin>/``, one class loader per plugin folder
  (:func:`install_plugin`).

The keys are read when a cluster process (or the mini-cluster) starts: a job submitted
to a running cluster reports through that cluster's reporter, whatever it sets.
"""

from __future__ import annotations

import importlib.metadata
import shutil
from collections.abc import Sequence
from pathlib import Path

from jobs.features.errors import DependencyError
from jobs.features.functions_jar import maven_jar
from jobs.features.maven import connectors_dir, fetch_jar

REPORTER = "prom"
FACTORY = "io.streamrec.flink.metrics.BoundPrometheusReporterFactory"
SOURCE_DIR = Path(__file__).with_name("reporter")
JAR_NAME = "streamrec-flink-metrics.jar"
PROMETHEUS_REPORTER = ("org.apache.flink", "flink-metrics-prometheus")
# The folder under $FLINK_PLUGINS_DIR; Flink names the plugin after it.
PLUGIN_NAME = "metrics-prometheus-bound"


def flink_version() -> str:
    """The Flink version of the installed ``apache-flink`` wheel (the reporter must match it)."""
    try:
        return importlib.metadata.version("apache-flink")
    except importlib.metadata.PackageNotFoundError:
        raise DependencyError(
            "apache-flink is not installed: install the flink extra, "
            "`.venv/bin/pip install -e '.[flink]'`"
        ) from None


def prometheus_jar(cache_dir: Path) -> Path:
    """``flink-metrics-prometheus`` of the wheel's Flink version, fetched on first use."""
    group, artifact = PROMETHEUS_REPORTER
    return fetch_jar(connectors_dir(cache_dir), group, artifact, flink_version())


def reporter_jar(cache_dir: Path) -> Path:
    """The bound reporter's jar, built against the wheel's Flink version on first use."""
    defines = {"flink.version": flink_version()}
    folder = cache_dir / "flink-metrics"
    return maven_jar(SOURCE_DIR, folder, JAR_NAME, "the Prometheus reporter", defines)


def reporter_jars(cache_dir: Path) -> tuple[Path, Path]:
    """Both jars the reporter needs: Flink's Prometheus reporter and the bound factory."""
    return prometheus_jar(cache_dir), reporter_jar(cache_dir)


def reporter_config(host: str, port: int) -> dict[str, str]:
    """Flink's keys for the bound Prometheus reporter on ``host:port`` (the only reporter)."""
    prefix = f"metrics.reporter.{REPORTER}."
    return {
        "metrics.reporters": REPORTER,
        f"{prefix}factory.class": FACTORY,
        f"{prefix}host": host,
        f"{prefix}port": str(port),
    }


def install_plugin(plugins_dir: Path, jars: Sequence[Path]) -> Path:
    """``plugins_dir`` holding only the reporter's plugin folder, with ``jars`` copied in.

    Copies, not links: a cache cleaned while the cluster runs must not break it.
    """
    shutil.rmtree(plugins_dir, ignore_errors=True)
    folder = plugins_dir / PLUGIN_NAME
    folder.mkdir(parents=True)
    for jar in jars:
        shutil.copyfile(jar, folder / jar.name)
    return plugins_dir
