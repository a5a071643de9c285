"""The local Flink cluster's rendered config: every listener on loopback, the reporter too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.features.metrics import FACTORY
from jobs.localstack import StackError, StackSettings
from jobs.localstack.flink_cluster import render_flink_config

# Every option through which Flink 2.x picks an interface to bind or to advertise.
ADDRESS_KEYS = {
    "jobmanager.rpc.address", "jobmanager.bind-host", "taskmanager.host",
    "taskmanager.bind-host", "rest.address", "rest.bind-address",
}  # fmt: skip


def _config(tmp_path: Path, extra: dict[str, str | int | bool] | None = None) -> dict[str, object]:
    settings = StackSettings(tmp_path / "home", tmp_path / "cache", 1, 2, 3)
    opts = {"env.java.opts.all": "-x"}
    text = render_flink_config(settings, tmp_path / "svc", opts, extra, metrics_port=9249)
    pairs = (line.split(": ", 1) for line in text.splitlines() if not line.startswith("#"))
    return {key: json.loads(value) for key, value in pairs}


@pytest.mark.parametrize("extra", [None, {"taskmanager.resource-id": "tm-1"}])
def test_every_address_is_loopback_and_nothing_binds_the_wildcard(
    tmp_path: Path, extra: dict[str, str | int | bool] | None
) -> None:
    config = _config(tmp_path, extra)
    assert {key: config.get(key) for key in ADDRESS_KEYS} == dict.fromkeys(
        ADDRESS_KEYS, "127.0.0.1"
    )
    named = {k for k in config if k.endswith((".address", ".host", "bind-host", "bind-address"))}
    assert named == {*ADDRESS_KEYS, "metrics.reporter.prom.host"}, "an unknown address option"
    assert not [k for k, v in config.items() if v in ("0.0.0.0", "::", "*")]
    # The one reporter is ours, bound to loopback: Flink's own Prometheus and JMX
    # reporters open a listener on every interface.
    assert config["metrics.reporters"] == "prom"
    assert config["metrics.reporter.prom.factory.class"] == FACTORY
    assert config["metrics.reporter.prom.host"] == "127.0.0.1"
    assert config["metrics.reporter.prom.port"] == "9249"
    assert {k.split(".")[2] for k in config if k.startswith("metrics.reporter.")} == {"prom"}


@pytest.mark.parametrize(
    "extra",
    [
        {"rest.bind-address": "0.0.0.0"},
        {"taskmanager.bind-host": "0.0.0.0"},
        {"metrics.reporter.prom.factory.class": "x"},
        {"metrics.reporter.prom.host": "0.0.0.0"},
        {"metrics.reporter.jmx.factory.class": "org.apache.flink.metrics.jmx.JMXReporterFactory"},
        {"metrics.reporters": "prom,jmx"},
    ],
)
def test_extras_cannot_rebind_a_listener(
    tmp_path: Path, extra: dict[str, str | int | bool]
) -> None:
    with pytest.raises(StackError, match="loopback"):
        _config(tmp_path, extra)
