"""The feature job's wiring: its Flink configuration, and the plan PyFlink builds from it.

``build`` registers every table and the inserts in one statement set; asking
the planner to explain it compiles the whole job (parsing, validation against
the tables, the sinks each view writes to) in a local JVM, with no broker: the
Kafka tables are only declared, never connected.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from jobs.features.functions_jar import functions_jar
from jobs.features.job import build, flink_config, jvm_args
from jobs.features.maven import kafka_connector_jar
from jobs.features.metrics import FACTORY
from jobs.features.settings import FeatureJobSettings
from runtime.settings import SettingsError, cache_dir
from tests.security.listeners import listeners_of


def test_config_turns_checkpoints_on_only_with_a_folder(tmp_path: Path) -> None:
    plain = flink_config(
        FeatureJobSettings(buffer_timeout_ms=7, connector_jars=(tmp_path / "a.jar",))
    )
    assert plain["table.local-time-zone"] == "UTC"
    assert plain["execution.buffer-timeout.interval"] == "7 ms"
    assert plain["pipeline.jars"] == (tmp_path / "a.jar").resolve().as_uri()
    assert not any(key.startswith("execution.checkpointing") for key in plain)
    kept = flink_config(FeatureJobSettings(checkpoint_dir=tmp_path, checkpoint_interval_ms=500))
    assert kept["execution.checkpointing.interval"] == "500 ms"
    assert kept["execution.checkpointing.dir"] == tmp_path.resolve().as_uri()
    assert kept["execution.checkpointing.externalized-checkpoint-retention"] == (
        "RETAIN_ON_CANCELLATION"
    )


def test_config_bounds_the_fresh_views_state_with_the_ttl_setting() -> None:
    default = FeatureJobSettings()
    assert default.state_ttl_ms >= 30 * 60_000  # past the fresh view's horizon
    assert flink_config(default)["table.exec.state.ttl"] == f"{default.state_ttl_ms} ms"
    assert flink_config(FeatureJobSettings(state_ttl_ms=7_200_000))["table.exec.state.ttl"] == (
        "7200000 ms"
    )
    assert "table.exec.state.ttl" not in flink_config(FeatureJobSettings(state_ttl_ms=0))


def test_a_local_run_serves_metrics_with_the_reporters_jars_on_its_class_path(
    tmp_path: Path,
) -> None:
    jars = {name: tmp_path / f"{name}.jar" for name in ("kafka", "functions", "prom", "bound")}
    settings = FeatureJobSettings(
        connector_jars=(jars["kafka"], jars["functions"]),
        metrics_jars=(jars["prom"], jars["bound"]),
    )
    config = flink_config(settings)
    # The mini-cluster finds reporter factories only through pipeline.jars' class loader.
    assert config["pipeline.jars"].split(";") == [jar.resolve().as_uri() for jar in jars.values()]
    assert config["metrics.reporters"] == "prom"
    assert config["metrics.reporter.prom.factory.class"] == FACTORY
    assert config["metrics.reporter.prom.host"] == "127.0.0.1"
    assert config["metrics.reporter.prom.port"] == "9251"
    moved = flink_config(FeatureJobSettings(metrics_port=19251, metrics_host="127.0.0.2"))
    assert (moved["metrics.reporter.prom.host"], moved["metrics.reporter.prom.port"]) == (
        "127.0.0.2",
        "19251",
    )
    off = flink_config(FeatureJobSettings(metrics_port=0))
    assert not [key for key in off if key.startswith("metrics.")]


def test_the_metrics_port_follows_the_environment_and_is_checked() -> None:
    env = {"STREAMREC_FEATURES_METRICS_PORT": "0", "STREAMREC_FEATURES_METRICS_HOST": "::1"}
    settings = FeatureJobSettings.load(env)
    assert (settings.metrics_port, settings.metrics_host) == (0, "::1")
    with pytest.raises(SettingsError, match="STREAMREC_FEATURES_METRICS_PORT"):
        FeatureJobSettings.load({"STREAMREC_FEATURES_METRICS_PORT": "70000"})


def test_settings_read_the_ttl_from_the_environment() -> None:
    env = {"STREAMREC_FEATURES_STATE_TTL_MS": "5000"}
    assert FeatureJobSettings.load(env).state_ttl_ms == 5000


@pytest.fixture(scope="module")
def jars() -> tuple[Path, ...]:
    return kafka_connector_jar(cache_dir()), functions_jar(cache_dir())


@pytest.mark.parametrize(
    ("views", "mode", "sinks"),
    [
        (
            None,
            "changed",
            [f"{view}_record_sink" for view in
             ("user_recent", "user_window", "item_window", "category_window")],
        ),
        (("user_window",), "every", ["user_window_record_sink"]),
        (
            None,
            "sql",
            ["user_recent_sink", "user_window_sink", "item_window_sink", "category_window_sink"],
        ),
        (("user_window",), "sql", ["user_window_sink"]),
    ],
)  # fmt: skip
def test_the_plan_writes_each_chosen_view_and_the_dead_letters(
    jars: tuple[Path, ...], views: tuple[str, ...] | None, mode: str, sinks: list[str]
) -> None:
    settings = FeatureJobSettings(connector_jars=jars, window_mode=mode)
    if views is not None:
        settings = replace(settings, views=views)
    plan = build(settings).explain()
    written = {line.split("table=[")[1].split("]")[0].rsplit(".", 1)[-1]
               for line in plan.splitlines() if "Sink(table=[" in line}  # fmt: skip
    assert written == {*sinks, "dead_letter_sink"}
    # Every view reads the source through the watermark floor (a DataStream operator).
    assert "anonymous_datastream_source" in plan and "SOURCE_WATERMARK()" in plan
    assert "TableSourceScan(table=[[default_catalog" not in plan


def test_the_local_mini_cluster_binds_loopback_only() -> None:
    config = flink_config(FeatureJobSettings())
    for key in ("jobmanager.bind-host", "taskmanager.bind-host", "rest.bind-address"):
        assert config[key] == "127.0.0.1"


def test_building_the_job_starts_no_python_worker_pool_on_every_interface(
    jars: tuple[Path, ...],
) -> None:
    build(FeatureJobSettings(connector_jars=jars))
    mine = listeners_of([os.getpid()]).get(os.getpid(), [])
    assert [(item.address, item.port) for item in mine if not item.loopback] == []


def test_the_local_jvm_heap_is_bounded_and_a_users_own_flag_wins() -> None:
    settings = FeatureJobSettings.load({"STREAMREC_FEATURES_JVM_HEAP_MB": "1024"})
    assert jvm_args(settings, "") == "-Xms1024m -Xmx1024m -XX:+UseParallelGC"
    assert "-XX:+UseG1GC" in jvm_args(replace(settings, jvm_gc="g1"), "")
    assert jvm_args(settings, "-Xmx4g -Dx=1").split()[-2:] == ["-Xmx4g", "-Dx=1"]
    with pytest.raises(SettingsError, match="STREAMREC_FEATURES_JVM_HEAP_MB"):
        FeatureJobSettings.load({"STREAMREC_FEATURES_JVM_HEAP_MB": "10"})
