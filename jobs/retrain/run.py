"""One retraining run: export the recent events, train against the champion, canary if better.

Each step is a process of its own, as an operator would run it, with its output in
the run's folder (``<work dir>/<time>/``): ``python -m jobs.ranker --dataset events
--baseline <champion> --register`` trains on the export, scores the champion on the
same held-out rows and registers the candidate in MLflow (``MLFLOW_TRACKING_URI``);
``python -m inference.serving canary models:/<name>/<version>`` publishes it and runs
the canary. A candidate whose served variant does not beat the champion's AUC is
registered (tagged ``retrain.verdict=not_better``) and not canaried. After a
promotion the candidate is the champion the next run must beat.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jobs.retrain.export import export_window
from jobs.retrain.policy import Decision
from jobs.retrain.settings import RetrainSettings
from runtime.model_registry import DEFAULT_TRACKING_URI, RegistryClient, RegistryError, tracking_uri

_REGISTERED = re.compile(r"registered models:/([^/\s]+)/(\d+)")
Ending = Literal["promoted", "rolled_back", "not_better", "no_data", "failed", "not_canaried"]


@dataclass
class RunReport:
    checks: tuple[str, ...]
    folder: Path
    ending: Ending = "failed"
    registered: str = ""  # name/version of the candidate in the registry
    candidate_auc: float | None = None
    champion_auc: float | None = None
    timeline: list[str] = field(default_factory=list)


class Retrainer:
    def __init__(
        self,
        settings: RetrainSettings,
        say: Callable[[str], None] = print,
        python: str = sys.executable,
    ) -> None:
        self.settings, self._say, self.python = settings, say, python
        self.champion = settings.champion.resolve()

    def run(self, decision: Decision, end_ms: int) -> RunReport:
        folder = (self.settings.work_dir / time.strftime("%Y%m%d-%H%M%S")).resolve()
        report = RunReport(decision.checks, folder)
        say = self._timeline(report)
        start_ms = end_ms - int(self.settings.window_minutes * 60_000)
        say(f"retraining: {decision.reason} ({', '.join(decision.checks)})")
        exported = export_window(
            self.settings.kafka, self.settings.events_topic, start_ms, folder / "events.jsonl"
        )
        minutes = self.settings.window_minutes
        say(
            f"exported {exported.records} events of {self.settings.events_topic} "
            f"({exported.partitions} partition(s), the last {minutes:g} min)"
        )
        if not exported.records:
            report.ending = "no_data"
            return report
        candidate = folder / "candidate"
        train = [
            self.python, "-m", "jobs.ranker", "--dataset", "events",
            "--file", str(exported.path), "--out", str(candidate),
            "--baseline", str(self.champion), "--register", *self.settings.train_args.split(),
        ]  # fmt: skip
        say(f"training against the champion {self.champion}")
        code, output = _run(train, folder / "train.log")
        if code != 0:
            say(f"training failed (exit {code}); see {folder / 'train.log'}")
            return report
        metrics: dict[str, Any] = json.loads((candidate / "metrics.json").read_text())
        against = metrics["against"]
        report.champion_auc = float(against["auc"])
        report.candidate_auc = next(
            float(v["auc"])
            for v in metrics["variants"]
            if v["variant"] == metrics["served_variant"]
        )
        if found := _REGISTERED.search(output):
            report.registered = f"{found[1]}/{found[2]}"
        verdict = "better" if against["beaten"] else "not_better"
        say(
            f"candidate {report.registered or candidate}: auc {report.candidate_auc:.4f}, "
            f"the champion's {report.champion_auc:.4f} on the same rows: {verdict}"
        )
        self._tag(
            report, {"retrain.trigger": ",".join(decision.checks), "retrain.verdict": verdict}
        )
        if not against["beaten"]:
            report.ending = "not_better"
            return report
        if not self.settings.canary or not report.registered:
            report.ending = "not_canaried"
            say("canary off" if not self.settings.canary else "not registered: no canary")
            return report
        uri = f"models:/{report.registered}"
        canary = [self.python, "-m", "inference.serving", "canary", uri,
                  *self.settings.canary_args.split()]  # fmt: skip
        say(f"canary of {uri}")
        code, output = _run(canary, folder / "canary.log")
        for line in output.splitlines():
            if line.startswith("["):  # the canary's own timeline: steps, holds, breaches
                say(f"  canary {line}")
        if code == 0:
            report.ending = "promoted"
            self.champion = candidate
            say(f"promoted: {uri} is the champion the next run must beat")
        else:
            report.ending = "rolled_back" if code == 2 else "failed"
            say(f"canary {report.ending} (exit {code}); see {folder / 'canary.log'}")
        return report

    def _timeline(self, report: RunReport) -> Callable[[str], None]:
        def say(text: str) -> None:
            line = f"[{time.strftime('%H:%M:%S')}] {text}"
            report.timeline.append(line)
            self._say(line)

        return say

    def _tag(self, report: RunReport, tags: dict[str, str]) -> None:
        if not report.registered:
            return
        name, version = report.registered.rsplit("/", 1)
        try:
            client = RegistryClient(tracking_uri(default=DEFAULT_TRACKING_URI))
            for key, value in tags.items():
                client.set_model_version_tag(name, version, key, value[:5000])
        except RegistryError as error:
            self._say(f"could not tag {report.registered}: {error}")


def _run(argv: Sequence[str], log: Path) -> tuple[int, str]:
    """Run ``argv`` with its output in ``log``; (exit code, output)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        code = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
    return code, log.read_text(errors="replace")
