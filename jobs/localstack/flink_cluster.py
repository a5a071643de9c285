"""A standalone Flink session cluster (one JobManager, one TaskManager) from the PyFlink wheel.

The `apache-flink` wheel carries a whole Flink distribution (bin/, lib/, conf/), so
no download is needed but the metrics reporter's two jars (jobs/features/metrics.py,
fetched and built with Maven into the cache). Each service gets its own
FLINK_CONF_DIR, FLINK_PLUGINS_DIR, log and temp folders under the stack home; the
wheel's own conf/, plugins/ and log/ are never written.
"""

from __future__ import annotations

import abc
import json
import os
import shutil
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from jobs.features import flink_client
from jobs.features.errors import FeatureJobError
from jobs.features.metrics import install_plugin, reporter_config, reporter_jars
from jobs.localstack import binaries
from jobs.localstack.errors import StackError
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings

# Sized for a 2-core, 24 GB box that also runs Kafka, Redis and the Python side.
JOBMANAGER_MEMORY = "1024m"
TASKMANAGER_MEMORY = "2048m"
TASK_SLOTS = 2
ConfigValue = str | int | bool
# Every address a cluster process binds or advertises: all loopback, so the REST API
# (which accepts job jars), RPC, blob and data ports are not reachable from the network.
# The metrics reporter is ours too, bound to loopback (Flink's own Prometheus reporter
# has no host option and binds every interface), so extras may not replace it either.
BIND_KEYS = (
    "jobmanager.rpc.address", "jobmanager.bind-host", "taskmanager.host",
    "taskmanager.bind-host", "rest.address", "rest.bind-address",
)  # fmt: skip


def flink_home() -> Path:
    """The Flink distribution inside the installed ``apache-flink`` wheel."""
    try:
        return flink_client.flink_home()
    except FeatureJobError as exc:
        raise StackError(str(exc)) from None


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested YAML mappings as Flink's dotted keys ({"a": {"b": 1}} -> {"a.b": 1})."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def java_opts_from(config_yaml: Path) -> dict[str, str]:
    """The distribution's `env.java.*` settings: the --add-opens Java 17 needs live there."""
    loaded = YAML(typ="safe").load(config_yaml.read_text()) or {}
    return {k: str(v) for k, v in flatten(loaded).items() if k.startswith("env.java.")}


def render_flink_config(
    settings: StackSettings,
    service_dir: Path,
    java_opts: Mapping[str, str],
    extra: Mapping[str, ConfigValue] | None = None,
    metrics_port: int = 0,
) -> str:
    """config.yaml (Flink 2.x's format) for one service of a loopback-only cluster.

    Flat dotted keys are valid there too. Only the REST and JobManager RPC ports are
    fixed (clients need them), and the service's Prometheus endpoint on
    ``metrics_port`` (Prometheus scrapes it; 0: none); every other port is 0 (random),
    so two stacks with different STREAMREC_FLINK_*_PORT values share a machine.
    """
    rebound = sorted(k for k in extra or {} if k in BIND_KEYS or k.startswith("metrics.reporter"))
    if rebound:
        raise StackError(f"the local Flink cluster binds loopback only; refused: {rebound}")
    opts = dict(java_opts)
    # Flink's console log4j config copies every line to stdout as well as to the log
    # file; warnings are enough there (stdout also catches JVM crashes).
    opts["env.java.opts.all"] = f"{opts.get('env.java.opts.all', '')} -Dconsole.log.level=WARN"
    config: dict[str, ConfigValue] = {
        **dict.fromkeys(BIND_KEYS, HOST),
        "jobmanager.rpc.port": settings.flink_rpc_port,
        "jobmanager.memory.process.size": JOBMANAGER_MEMORY,
        "jobmanager.execution.failover-strategy": "region",
        "taskmanager.rpc.port": "0",
        "taskmanager.data.port": 0,
        "taskmanager.memory.process.size": TASKMANAGER_MEMORY,
        "taskmanager.numberOfTaskSlots": TASK_SLOTS,
        "parallelism.default": 1,
        "rest.port": settings.flink_rest_port,
        "blob.server.port": "0",
        "metrics.internal.query-service.port": "0",
        **(reporter_config(HOST, metrics_port) if metrics_port else {}),
        "io.tmp.dirs": str(service_dir / "tmp"),
        "web.tmpdir": str(service_dir / "web"),
        "blob.storage.directory": str(service_dir / "blobs"),
        # HOP windows align to the session zone otherwise (see DESIGN.md).
        "table.local-time-zone": "UTC",
        # Python UDF workers and the client-side driver use this very interpreter,
        # whose environment has pyflink and the project's dependencies.
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        **opts,
        **(extra or {}),
    }
    lines = ["# Written by jobs.localstack on every start; edits are overwritten."]
    # JSON scalars are valid YAML and quote paths and option strings safely.
    lines += [f"{key}: {json.dumps(value)}" for key, value in config.items()]
    return "\n".join(lines) + "\n"


def rest_json(base_url: str, path: str, method: str = "GET", timeout_s: float = 2.0) -> Any:
    """One call to the Flink REST API; StackError with Flink's error text on failure."""
    request = urllib.request.Request(f"{base_url}{path}", method=method)
    # No proxy: an http_proxy in the environment must not swallow loopback calls.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")[-2000:]
        raise StackError(f"Flink REST {method} {path}: HTTP {error.code} {detail}") from None
    except (OSError, ValueError) as error:
        raise StackError(f"Flink REST {method} {base_url}{path} failed: {error}") from None
    return json.loads(body) if body.strip() else {}


class FlinkService(Service):
    """Runs `bin/<script> start-foreground`, which execs the JVM: our pid is the JVM's."""

    script = ""
    # The name Flink's scripts put in the log file name.
    entrypoint = ""
    # SIGTERM runs Flink's shutdown hooks (release slots, delete blobs); give them time.
    stop_timeout_s = 30.0

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.conf_dir = self.dir / "conf"
        self.log_dir = self.dir / "log"

    @property
    def log_path(self) -> Path:
        # flink-console.sh names it flink-<user>-<entrypoint>-<n>-<host>.log.
        logs = sorted(self.log_dir.glob(f"flink-*-{self.entrypoint}-*.log"), key=_mtime)
        return logs[-1] if logs else self.stdout_path

    @property
    def plugins_dir(self) -> Path:
        return self.dir / "plugins"

    @property
    @abc.abstractmethod
    def metrics_port(self) -> int:
        """Where this process's Prometheus reporter listens (on loopback)."""

    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.metrics_port}/metrics"

    def ensure_installed(self) -> None:
        flink_home()
        binaries.find_java()
        self.reporter_jars()

    def reporter_jars(self) -> tuple[Path, ...]:
        try:
            return reporter_jars(self.settings.cache_dir)
        except FeatureJobError as exc:
            raise StackError(f"{self.name}: the metrics reporter: {exc}") from None

    def config_extra(self) -> dict[str, ConfigValue]:
        return {}

    def prepare(self) -> None:
        home = flink_home()
        for folder in (self.conf_dir, self.log_dir, self.dir / "tmp", self.dir / "run"):
            folder.mkdir(parents=True, exist_ok=True)
        # The start scripts and `flink run` look for their logging configs next to config.yaml.
        for pattern in ("log4j*.properties", "logback*.xml"):
            for source in (home / "conf").glob(pattern):
                shutil.copyfile(source, self.conf_dir / source.name)
        install_plugin(self.plugins_dir, self.reporter_jars())
        java_opts = java_opts_from(home / "conf" / "config.yaml")
        text = render_flink_config(
            self.settings, self.dir, java_opts, self.config_extra(), self.metrics_port
        )
        (self.conf_dir / "config.yaml").write_text(text)

    def env(self) -> Mapping[str, str]:
        return {
            **os.environ,
            "FLINK_CONF_DIR": str(self.conf_dir),
            "FLINK_LOG_DIR": str(self.log_dir),
            # Only the reporter's plugin: the wheel's plugins/ holds Flink's own
            # Prometheus reporter, which would bind every interface if configured.
            "FLINK_PLUGINS_DIR": str(self.plugins_dir),
            # Flink's own pid bookkeeping (not ours); /tmp would be shared by all stacks.
            "FLINK_PID_DIR": str(self.dir / "run"),
            "PYFLINK_CLIENT_EXECUTABLE": sys.executable,
        }

    def command(self) -> list[str]:
        script = flink_home() / "bin" / self.script
        # The -D repeats a config value so that the stack home (our /proc marker) is in
        # argv from the first instant, while the script still runs before it execs java.
        return ["/bin/bash", str(script), "start-foreground", "-D", f"io.tmp.dirs={self.dir}/tmp"]

    def overview(self) -> dict[str, Any] | None:
        try:
            answer = rest_json(self.settings.flink_rest_url, "/overview", timeout_s=1.0)
        except StackError:
            return None
        return answer if isinstance(answer, dict) else None


class FlinkJobManager(FlinkService):
    name = "flink-jobmanager"
    script = "jobmanager.sh"
    entrypoint = "standalonesession"

    @property
    def metrics_port(self) -> int:
        return self.settings.flink_jobmanager_metrics_port

    def ports(self) -> tuple[int, ...]:
        return (self.settings.flink_rest_port, self.settings.flink_rpc_port, self.metrics_port)

    def endpoint(self) -> str:
        return self.settings.flink_rest_url

    def exports(self) -> dict[str, str]:
        return {"STREAMREC_FLINK_REST_URL": self.settings.flink_rest_url}

    def is_healthy(self) -> bool:
        return self.overview() is not None


class FlinkTaskManager(FlinkService):
    name = "flink-taskmanager"
    script = "taskmanager.sh"
    entrypoint = "taskexecutor"

    def __init__(self, settings: StackSettings, number: int = 1) -> None:
        # The first keeps the plain name, so a one-TaskManager stack is unchanged.
        self.number = number
        self.name = taskmanager_name(number)
        super().__init__(settings)

    @classmethod
    def instances(cls, settings: StackSettings) -> list[Service]:
        return [cls(settings, n) for n in range(1, settings.flink_taskmanagers + 1)]

    @property
    def resource_id_path(self) -> Path:
        return self.dir / "resource-id"

    @property
    def metrics_port(self) -> int:
        return self.settings.flink_taskmanager_metrics_port + 10 * (self.number - 1)

    def ports(self) -> tuple[int, ...]:
        return (self.metrics_port,)  # the others are random (see render_flink_config)

    def endpoint(self) -> str:
        return f"{self.settings.flink_rest_url}/#/task-manager"

    def prepare(self) -> None:
        if FlinkJobManager(self.settings).overview() is None:
            raise StackError(
                f"flink-taskmanager needs a JobManager at {self.settings.flink_rest_url}; "
                "start both with `python -m jobs.localstack up --services flink`."
            )
        # A fresh id per start: the JobManager keeps a killed TaskManager listed until
        # its heartbeat times out, and that old entry must not count as healthy.
        self.dir.mkdir(parents=True, exist_ok=True)
        self.resource_id_path.write_text(f"streamrec-tm-{uuid.uuid4().hex[:12]}\n")
        super().prepare()

    def config_extra(self) -> dict[str, ConfigValue]:
        extra: dict[str, ConfigValue] = {"taskmanager.resource-id": self.resource_id()}
        if self.settings.flink_taskmanagers > 1:
            # One slot each: a job at parallelism n then runs on n TaskManagers, as it
            # would on a cluster, instead of Flink filling one TaskManager's slots first.
            extra["taskmanager.numberOfTaskSlots"] = 1
        return extra

    def resource_id(self) -> str:
        try:
            return self.resource_id_path.read_text().strip()
        except FileNotFoundError:
            return ""

    def is_healthy(self) -> bool:
        rid = self.resource_id()
        try:
            answer = rest_json(self.settings.flink_rest_url, "/taskmanagers", timeout_s=1.0)
        except StackError:
            return False
        managers = answer.get("taskmanagers", []) if isinstance(answer, dict) else []
        return any(tm.get("id") == rid and tm.get("slotsNumber", 0) > 0 for tm in managers)


def taskmanager_name(number: int) -> str:
    """``flink-taskmanager``, then ``flink-taskmanager-2``, ``-3``..."""
    return "flink-taskmanager" if number == 1 else f"flink-taskmanager-{number}"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
