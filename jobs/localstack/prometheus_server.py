"""A local Prometheus (``make observe``) scraping every part of the pipeline on this machine.

It runs beside the stack, on loopback, with the same job names, scrape targets and
SLO rules as the compose file's Prometheus (docker/prometheus), so the dashboard in
docker/grafana and the alert rules read the same series here as in a deployment.
The parts' ports are their settings' defaults (``schemas.metrics_ports.METRICS_PORTS``),
read again from this process's environment, so a part moved with its
``STREAMREC_*_METRICS_PORT`` variable is scraped where it went. A target that is not
running shows as down (``up == 0``), which is what Prometheus is for.

The program comes from Debian's ``prometheus`` package (jobs/localstack/prometheus_binaries.py);
its data lives under ``<home>/prometheus/data`` and is kept for a day.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from jobs.features.settings import METRICS_PORT as FEATURES_METRICS_PORT
from jobs.localstack.process import answers_http
from jobs.localstack.prometheus_binaries import ensure_program
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings
from schemas.metrics_ports import METRICS_PORTS

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = REPO_ROOT / "docker" / "prometheus" / "rules"
# The variable that moves each part's /metrics port (the parts' settings read it too).
PORT_VARIABLES = {
    "worker": "STREAMREC_WORKER_METRICS_PORT",
    "drift": "STREAMREC_DRIFT_METRICS_PORT",
    "canary": "STREAMREC_CANARY_METRICS_PORT",
    "outcome": "STREAMREC_OUTCOME_METRICS_PORT",
    "writer": "STREAMREC_FEATURE_WRITER_METRICS_PORT",
}
FEATURES_PORT_VARIABLE = "STREAMREC_FEATURES_METRICS_PORT"
RETENTION = "1d"


def part_targets(environ: Mapping[str, str]) -> dict[str, list[str]]:
    """The pipeline's own parts, by job name: where each one's /metrics is on this machine."""
    targets = {}
    for job, port in METRICS_PORTS.items():
        chosen = environ.get(PORT_VARIABLES[job], "").strip() or str(port)
        if chosen != "0":  # 0 turns a part's /metrics off: nothing to scrape
            targets[job] = [f"{HOST}:{chosen}"]
    return targets


def stack_targets(
    settings: StackSettings, environ: Mapping[str, str] | None = None
) -> dict[str, list[str]]:
    """The stack's services that export metrics, by the compose file's job names.

    ``flink`` also holds a local run of the feature job (``python -m jobs.features``),
    whose mini-cluster serves the same Flink metrics on ``STREAMREC_FEATURES_METRICS_PORT``.
    """
    flink = [
        f"{HOST}:{settings.flink_jobmanager_metrics_port}",
        f"{HOST}:{settings.flink_taskmanager_metrics_port}",
    ]
    local = (environ or {}).get(FEATURES_PORT_VARIABLE, "").strip() or str(FEATURES_METRICS_PORT)
    if local != "0":  # 0 turns the local run's /metrics off
        flink.append(f"{HOST}:{local}")
    return {"triton": [f"{HOST}:{settings.triton_metrics_port}"], "flink": flink}


def duration(seconds: float) -> str:
    """A Prometheus duration: whole units only ("1.6s" is refused, "1600ms" is not)."""
    return f"{round(seconds * 1000)}ms"


def render_config(
    jobs: Mapping[str, Sequence[str]], interval_s: float, rule_files: Sequence[Path]
) -> str:
    """prometheus.yml for ``jobs`` (name to host:port targets), every ``interval_s`` seconds.

    Written as JSON, which YAML reads as it is: no YAML writer, and no quoting to get wrong.
    """
    config = {
        "global": {
            "scrape_interval": duration(interval_s),
            "evaluation_interval": duration(interval_s),
            # A scrape must end before the next one starts.
            "scrape_timeout": duration(max(interval_s * 0.8, 0.1)),
        },
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(targets)}]}
            for job, targets in jobs.items()
        ],
    }
    return json.dumps(config, indent=2) + "\n"


class PrometheusService(Service):
    name = "prometheus"
    # It flushes its head block on SIGTERM; a second or two on a small store.
    stop_timeout_s = 20.0

    def __init__(self, settings: StackSettings, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(settings)
        self.environ = os.environ if environ is None else environ
        self._binary: str | None = None

    @property
    def config_path(self) -> Path:
        return self.dir / "prometheus.yml"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.settings.prometheus_port}"

    def ports(self) -> tuple[int, ...]:
        return (self.settings.prometheus_port,)

    def endpoint(self) -> str:
        return self.url

    def metrics_url(self) -> str:
        return f"{self.url}/metrics"

    def exports(self) -> dict[str, str]:
        return {"STREAMREC_PROMETHEUS_URL": self.url}

    def targets(self) -> dict[str, list[str]]:
        return {
            **part_targets(self.environ),
            **stack_targets(self.settings, self.environ),
            "prometheus": [f"{HOST}:{self.settings.prometheus_port}"],
        }

    def ensure_installed(self) -> None:
        self._binary = ensure_program("prometheus")

    def prepare(self) -> None:
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        rules = sorted(RULES_DIR.glob("*.rules.yml"))
        interval = self.settings.prometheus_scrape_interval_s
        self.config_path.write_text(render_config(self.targets(), interval, rules))

    def command(self) -> list[str]:
        binary = self._binary or ensure_program("prometheus")
        return [
            binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.dir / 'data'}",
            f"--storage.tsdb.retention.time={RETENTION}",
            f"--web.listen-address={HOST}:{self.settings.prometheus_port}",
        ]

    def is_healthy(self) -> bool:
        return answers_http(f"{self.url}/-/ready")
