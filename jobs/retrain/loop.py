"""The retraining loop: drift alerts in, retraining runs out (one at a time, in a thread).

Delivery: alerts are committed once observed. The streak and the time of the last
run live in this process only, so a restarted loop starts a new streak and may start
a run sooner than the minimum interval after one that ran before the restart; a run
in progress when the process stops is lost (its files stay in the work folder).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from jobs.retrain.policy import Decision, Trigger
from jobs.retrain.run import Retrainer, RunReport
from jobs.retrain.settings import RetrainSettings
from runtime.consumer import RecordConsumer
from schemas.codec import drift_codec


class RetrainLoop:
    def __init__(self, settings: RetrainSettings, say: Callable[[str], None] = print) -> None:
        self.settings, self.say = settings, say
        self.trigger = Trigger(settings.policy)
        self.retrainer = Retrainer(settings, say)
        self.reports: list[RunReport] = []
        self._run: threading.Thread | None = None

    def watch(self, stop: threading.Event) -> None:
        consumer = RecordConsumer(
            self.settings.kafka, [self.settings.alerts_topic], self.settings.group_id, drift_codec()
        )
        self.say(f"watching {self.settings.alerts_topic} ({self.settings.consecutive} drifted "
                 f"checks in a row start a run)")  # fmt: skip
        try:
            while not stop.is_set():
                for _message, alert in consumer.poll_batch(100, 1.0):
                    decision = self.trigger.observe(alert, time.time())
                    self.say(f"{decision.action}: {decision.reason}")
                    if decision.action == "start":
                        self._start(decision, alert.window_end)
                consumer.commit()
        finally:
            consumer.close()
            if self._run is not None:
                self._run.join()

    def _start(self, decision: Decision, end_ms: int) -> None:
        def run() -> None:
            try:
                self.reports.append(self.retrainer.run(decision, end_ms))
            except Exception as error:  # a failed run must not end the loop
                self.say(f"retraining run failed: {error!r}")
            finally:
                self.trigger.finished()

        self._run = threading.Thread(target=run, name="retrain-run", daemon=True)
        self._run.start()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once no run is in progress (for callers that stop after one)."""
        deadline = time.monotonic() + timeout_s
        while self.trigger.running and time.monotonic() < deadline:
            time.sleep(0.2)
        return not self.trigger.running
