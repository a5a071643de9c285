"""The metrics reporter's jars and keys, without Flink or Maven (a stand-in mvn)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from jobs.features import functions_jar, metrics
from jobs.features.functions_jar import source_digest
from jobs.features.metrics import (
    FACTORY,
    PLUGIN_NAME,
    SOURCE_DIR,
    flink_version,
    install_plugin,
    prometheus_jar,
    reporter_config,
    reporter_jar,
)


def test_the_reporter_is_ours_on_the_given_address() -> None:
    assert reporter_config("127.0.0.1", 9251) == {
        "metrics.reporters": "prom",
        "metrics.reporter.prom.factory.class": FACTORY,
        "metrics.reporter.prom.host": "127.0.0.1",
        "metrics.reporter.prom.port": "9251",
    }
    # The factory named is the one the jar's service file declares.
    services = SOURCE_DIR / "src/main/resources/META-INF/services"
    declared = (services / "org.apache.flink.metrics.reporter.MetricReporterFactory").read_text()
    assert declared.split() == [FACTORY]
    java = SOURCE_DIR / "src/main/java" / (FACTORY.replace(".", "/") + ".java")
    assert java.exists()


def test_the_version_is_the_installed_wheels() -> None:
    assert flink_version() == importlib.metadata.version("apache-flink")
    # The pom's own default (for a plain `mvn package`) agrees with the wheel.
    pom = (SOURCE_DIR / "pom.xml").read_text()
    assert re.search(r"<flink.version>(.+)</flink.version>", pom)[1] == flink_version()  # type: ignore[index]


def test_flinks_prometheus_reporter_is_fetched_at_the_wheels_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[object, ...]] = []

    def fetch_jar(*args: object) -> Path:
        asked.append(args)
        return Path("x.jar")

    monkeypatch.setattr(metrics, "fetch_jar", fetch_jar)
    prometheus_jar(tmp_path)
    assert asked == [
        (tmp_path / "flink-connectors", "org.apache.flink", "flink-metrics-prometheus",
         flink_version()),
    ]  # fmt: skip


def _fake_mvn(tmp_path: Path) -> str:
    # Writes the jar into -Dbuild.dir=..., as `mvn package` would, and logs its arguments.
    script = tmp_path / "mvn"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path}/mvn.calls\n'
        "for a; do case $a in -Dbuild.dir=*) out=${a#*=};; esac; done\n"
        'echo jar > "$out/streamrec-flink-metrics.jar"\n'
    )
    script.chmod(0o755)
    return str(script)


def test_the_bound_reporter_is_built_once_against_the_wheels_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(functions_jar, "find_mvn", lambda: _fake_mvn(tmp_path))
    jar = reporter_jar(tmp_path / "cache")
    assert reporter_jar(tmp_path / "cache") == jar
    assert jar.parent.parent == (tmp_path / "cache" / "flink-metrics").resolve()
    (call,) = (tmp_path / "mvn.calls").read_text().splitlines()
    assert f"-Dflink.version={flink_version()}" in call.split()
    assert f"-f {SOURCE_DIR / 'pom.xml'} package" in call


def test_a_different_flink_version_is_another_build() -> None:
    assert source_digest(SOURCE_DIR, {"flink.version": "2.2.1"}) != source_digest(
        SOURCE_DIR, {"flink.version": "2.3.0"}
    )


def test_the_plugin_folder_holds_only_the_reporter(tmp_path: Path) -> None:
    jars = [tmp_path / "a.jar", tmp_path / "b.jar"]
    for jar in jars:
        jar.write_text(jar.name)
    plugins = tmp_path / "plugins"
    (plugins / "metrics-jmx").mkdir(parents=True)
    assert install_plugin(plugins, jars) == plugins
    assert [p.name for p in plugins.iterdir()] == [PLUGIN_NAME]
    assert sorted(p.name for p in (plugins / PLUGIN_NAME).iterdir()) == ["a.jar", "b.jar"]
