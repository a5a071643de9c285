"""When sustained drift starts a retraining run, and what holds it back (no services)."""

from __future__ import annotations

from jobs.retrain.policy import RetrainPolicy, Trigger
from schemas.records import DriftAlert

T0 = 1_700_000_000_000


def alert(n: int, status: str) -> DriftAlert:
    return DriftAlert(f"c{n}", T0 + n, T0, T0 + n, 5000, 5000, status, 0.5, [])  # type: ignore[arg-type]


def feed(trigger: Trigger, statuses: str, now_s: float = 0.0) -> list[str]:
    """One action per status letter: d(rift), o(k), i(nsufficient data)."""
    names = {"d": "drift", "o": "ok", "i": "insufficient_data"}
    return [trigger.observe(alert(n, names[s]), now_s).action for n, s in enumerate(statuses)]


def test_three_drifted_checks_in_a_row_start_a_run() -> None:
    trigger = Trigger(RetrainPolicy(consecutive=3, min_interval_s=0))
    assert feed(trigger, "ddd") == ["wait", "wait", "start"]


def test_a_check_without_drift_resets_the_streak_and_a_quiet_one_does_not() -> None:
    trigger = Trigger(RetrainPolicy(consecutive=3, min_interval_s=0))
    assert feed(trigger, "ddodidd") == ["wait"] * 6 + ["start"]


def test_one_run_at_a_time() -> None:
    trigger = Trigger(RetrainPolicy(consecutive=1, min_interval_s=0))
    assert feed(trigger, "dd") == ["start", "hold"]
    trigger.finished()
    assert feed(trigger, "d") == ["start"]


def test_the_minimum_interval_holds_a_second_run() -> None:
    trigger = Trigger(RetrainPolicy(consecutive=1, min_interval_s=600))
    assert trigger.observe(alert(1, "drift"), now_s=1000).action == "start"
    trigger.finished()
    held = trigger.observe(alert(2, "drift"), now_s=1300)
    assert held.action == "hold" and "300 s ago" in held.reason
    assert trigger.observe(alert(3, "drift"), now_s=1601).action == "start"


def test_the_start_names_the_checks_of_its_streak() -> None:
    trigger = Trigger(RetrainPolicy(consecutive=2, min_interval_s=0))
    trigger.observe(alert(1, "drift"), 0)
    decision = trigger.observe(alert(2, "drift"), 0)
    assert decision.checks == ("c1", "c2")
