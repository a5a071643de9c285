"""The Flink services without starting Flink: config, command line, selection, connector fetch."""

import json
import os
import sys
from pathlib import Path

import pytest

from jobs.features import maven
from jobs.features.errors import DependencyError
from jobs.features.maven import connectors_dir, fetch_jar, kafka_connector_jar
from jobs.features.metrics import FACTORY, PLUGIN_NAME
from jobs.localstack import StackError, StackSettings, flink_cluster
from jobs.localstack.flink_cluster import (
    FlinkJobManager,
    FlinkTaskManager,
    flatten,
    flink_home,
    java_opts_from,
    render_flink_config,
)
from jobs.localstack.stack import Stack, select


def _settings(tmp_path: Path) -> StackSettings:
    return StackSettings(
        tmp_path / "home", tmp_path / "cache", 1, 2, 3, flink_rest_port=18081, flink_rpc_port=16123
    )


def _parse(text: str) -> dict[str, object]:
    # Every line the renderer writes is `key: <JSON scalar>`.
    pairs = (line.split(": ", 1) for line in text.splitlines() if not line.startswith("#"))
    return {key: json.loads(value) for key, value in pairs}


def test_config_binds_loopback_with_fixed_client_ports_and_random_others(tmp_path: Path) -> None:
    opts = {"env.java.opts.all": "--add-opens=java.base/java.lang=ALL-UNNAMED"}
    config = _parse(render_flink_config(_settings(tmp_path), tmp_path / "jm", opts))
    assert config["rest.port"] == 18081
    assert config["jobmanager.rpc.port"] == 16123
    for key in ("rest.address", "rest.bind-address", "jobmanager.rpc.address", "taskmanager.host"):
        assert config[key] == "127.0.0.1"
    assert config["jobmanager.bind-host"] == config["taskmanager.bind-host"] == "127.0.0.1"
    for key in ("blob.server.port", "taskmanager.rpc.port", "metrics.internal.query-service.port"):
        assert config[key] == "0"
    assert config["taskmanager.data.port"] == 0
    assert not [key for key in config if key.startswith("metrics.reporter")]  # none asked for


def test_config_serves_metrics_on_the_given_port_of_loopback(tmp_path: Path) -> None:
    text = render_flink_config(_settings(tmp_path), tmp_path / "jm", {}, metrics_port=19249)
    config = _parse(text)
    assert {k: v for k, v in config.items() if k.startswith("metrics.reporter")} == {
        "metrics.reporters": "prom",
        "metrics.reporter.prom.factory.class": FACTORY,
        "metrics.reporter.prom.host": "127.0.0.1",
        "metrics.reporter.prom.port": "19249",
    }


def test_config_memory_time_zone_python_and_folders(tmp_path: Path) -> None:
    opts = {"env.java.opts.all": "--add-opens=x"}
    extra = {"taskmanager.resource-id": "tm-1"}
    config = _parse(render_flink_config(_settings(tmp_path), tmp_path / "tm", opts, extra))
    assert config["jobmanager.memory.process.size"] == "1024m"
    assert config["taskmanager.memory.process.size"] == "2048m"
    assert config["taskmanager.numberOfTaskSlots"] == 2
    assert config["table.local-time-zone"] == "UTC"
    assert config["python.executable"] == config["python.client.executable"] == sys.executable
    assert config["io.tmp.dirs"] == str(tmp_path / "tm" / "tmp")
    assert str(config["web.tmpdir"]).startswith(str(tmp_path / "tm"))
    # The distribution's Java 17 flags survive; the console only gets warnings.
    assert config["env.java.opts.all"] == "--add-opens=x -Dconsole.log.level=WARN"
    assert config["taskmanager.resource-id"] == "tm-1"


def test_java_opts_come_from_the_wheels_own_config() -> None:
    opts = java_opts_from(flink_home() / "conf" / "config.yaml")
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in opts["env.java.opts.all"]
    assert all(key.startswith("env.java.") for key in opts)


def test_flatten_nested_yaml() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": "x"}}, "e": True}) == {
        "a.b": 1,
        "a.c.d": "x",
        "e": True,
    }


def test_command_carries_the_marker_from_the_start(tmp_path: Path) -> None:
    jobmanager = FlinkJobManager(_settings(tmp_path))
    argv = jobmanager.command()
    assert argv[0] == "/bin/bash"
    assert argv[1:3] == [str(flink_home() / "bin" / "jobmanager.sh"), "start-foreground"]
    # The shell runs for seconds before it execs java; the pid guard must know it already.
    assert jobmanager.marker in " ".join(argv)
    assert FlinkTaskManager(_settings(tmp_path)).command()[1].endswith("taskmanager.sh")


def test_env_points_flink_at_the_stack_home(tmp_path: Path) -> None:
    taskmanager = FlinkTaskManager(_settings(tmp_path))
    env = taskmanager.env()
    for key in ("FLINK_CONF_DIR", "FLINK_LOG_DIR", "FLINK_PID_DIR", "FLINK_PLUGINS_DIR"):
        assert env[key].startswith(taskmanager.marker)
    assert env["PATH"] == os.environ["PATH"]


def _fake_reporter_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    jars = [tmp_path / "flink-metrics-prometheus-9.jar", tmp_path / "streamrec-flink-metrics.jar"]
    for jar in jars:
        jar.write_text(jar.name)
    monkeypatch.setattr(flink_cluster, "reporter_jars", lambda cache_dir: tuple(jars))
    return jars


def test_prepare_writes_config_logging_files_and_the_reporters_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jars = _fake_reporter_jars(tmp_path, monkeypatch)
    jobmanager = FlinkJobManager(_settings(tmp_path))
    stale = jobmanager.plugins_dir / "metrics-jmx"
    stale.mkdir(parents=True)
    jobmanager.prepare()
    config = _parse((jobmanager.conf_dir / "config.yaml").read_text())
    assert config["rest.port"] == 18081
    assert config["metrics.reporter.prom.port"] == "9249"
    assert (jobmanager.conf_dir / "log4j-console.properties").exists()
    assert (jobmanager.conf_dir / "log4j-cli.properties").exists()  # for `flink run`
    # One plugin folder, the reporter's: Flink loads each folder with a class loader of its own.
    plugin = jobmanager.plugins_dir / PLUGIN_NAME
    assert [p.name for p in jobmanager.plugins_dir.iterdir()] == [PLUGIN_NAME]
    assert sorted(p.name for p in plugin.iterdir()) == sorted(jar.name for jar in jars)
    assert jobmanager.env()["FLINK_PLUGINS_DIR"] == str(jobmanager.plugins_dir)


def test_ports_endpoints_and_log_path(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    jobmanager, taskmanager = FlinkJobManager(settings), FlinkTaskManager(settings)
    assert jobmanager.ports() == (18081, 16123, 9249)
    assert taskmanager.ports() == (9250,)
    assert jobmanager.metrics_url() == "http://127.0.0.1:9249/metrics"
    assert taskmanager.metrics_url() == "http://127.0.0.1:9250/metrics"
    assert jobmanager.endpoint() == "http://127.0.0.1:18081"
    assert taskmanager.endpoint() == "http://127.0.0.1:18081/#/task-manager"
    assert jobmanager.exports() == {"STREAMREC_FLINK_REST_URL": "http://127.0.0.1:18081"}
    assert jobmanager.log_path == jobmanager.stdout_path  # nothing logged yet
    jobmanager.log_dir.mkdir(parents=True)
    log = jobmanager.log_dir / "flink-me-standalonesession-0-host.log"
    log.write_text("started\n")
    assert jobmanager.log_path == log


def test_taskmanager_refuses_to_start_without_a_jobmanager(tmp_path: Path) -> None:
    taskmanager = FlinkTaskManager(_settings(tmp_path))
    with pytest.raises(StackError, match=r"needs a JobManager at http://127\.0\.0\.1:18081"):
        taskmanager.prepare()
    assert not taskmanager.is_healthy()


def test_flink_alias_selects_both_services_in_order(tmp_path: Path) -> None:
    known = list(Stack(_settings(tmp_path)).services)
    at = known.index("flink-jobmanager")
    assert known[at : at + 2] == ["flink-jobmanager", "flink-taskmanager"]
    assert select(["flink", "kafka"], known) == ["kafka", "flink-jobmanager", "flink-taskmanager"]
    with pytest.raises(
        StackError, match=r"known: .*flink-taskmanager, triton, mlflow, prometheus, flink$"
    ):
        select(["flunk"], known)


def _fake_mvn(tmp_path: Path, body: str) -> str:
    script = tmp_path / "mvn"
    script.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/mvn.calls\n{body}\n')
    script.chmod(0o755)
    return str(script)


def test_fetch_jar_runs_maven_once_and_marks_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writes a jar named after the pom's artifact into -DoutputDirectory=..., as mvn would.
    body = (
        "for a; do case $a in -DoutputDirectory=*) out=${a#*=};; esac; done\n"
        'echo jar > "$out/x-1.jar"'
    )
    monkeypatch.setattr(maven, "find_mvn", lambda: _fake_mvn(tmp_path, body))
    folder = tmp_path / "cache" / "flink-connectors"
    assert fetch_jar(folder, "g", "x", "1") == folder / "x-1.jar"
    assert fetch_jar(folder, "g", "x", "1") == folder / "x-1.jar"
    calls = (tmp_path / "mvn.calls").read_text().splitlines()
    assert len(calls) == 1
    assert "-DexcludeTransitive=true" in calls[0]
    assert "dependency:copy-dependencies" in calls[0]


def test_fetch_jar_failure_reports_maven_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "echo 'Could not resolve g:x:1'; exit 1"
    monkeypatch.setattr(maven, "find_mvn", lambda: _fake_mvn(tmp_path, body))
    with pytest.raises(
        DependencyError, match=r"(?s)fetching g:x:1 with Maven failed.*resolve g:x:1"
    ):
        fetch_jar(tmp_path / "c", "g", "x", "1")
    assert not list((tmp_path / "c").glob(".*complete"))


def test_connector_jar_already_fetched_is_not_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path)
    folder = connectors_dir(settings.cache_dir)
    folder.mkdir(parents=True)
    (folder / "flink-sql-connector-kafka-5.0.0-2.2.jar").write_text("jar")
    (folder / ".flink-sql-connector-kafka-5.0.0-2.2.complete").write_text("done")
    monkeypatch.setattr(maven, "find_mvn", lambda: pytest.fail("no download expected"))
    assert kafka_connector_jar(settings.cache_dir).name == "flink-sql-connector-kafka-5.0.0-2.2.jar"


def test_two_taskmanagers_are_services_of_their_own_with_one_slot_each(tmp_path: Path) -> None:
    settings = StackSettings.load(
        {"STREAMREC_FLINK_TASKMANAGERS": "2", "STREAMREC_FLINK_TASKMANAGER_METRICS_PORT": "19250"},
        home=tmp_path,
        cache_dir=tmp_path,
    )
    known = list(Stack(settings).services)
    assert select(["flink"], known) == [
        "flink-jobmanager",
        "flink-taskmanager",
        "flink-taskmanager-2",
    ]
    second = FlinkTaskManager(settings, 2)
    assert second.dir == tmp_path / "flink-taskmanager-2"
    assert second.metrics_port == 19260
    assert second.config_extra()["taskmanager.numberOfTaskSlots"] == 1
    # One TaskManager keeps the configured slots (two) for a job of parallelism 2.
    alone = FlinkTaskManager(_settings(tmp_path))
    assert "taskmanager.numberOfTaskSlots" not in alone.config_extra()
    with pytest.raises(StackError, match="STREAMREC_FLINK_TASKMANAGERS"):
        StackSettings.load({"STREAMREC_FLINK_TASKMANAGERS": "0"}, home=tmp_path, cache_dir=tmp_path)
