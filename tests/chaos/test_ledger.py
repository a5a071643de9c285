"""The chaos run's accounting: lost, duplicated, missing dead letters, fault windows."""

from __future__ import annotations

import math
from collections import Counter

from schemas.records import Recommendation
from tests.chaos.ledger import FaultWindow, Ledger, baseline_window, fault_report, totals


def answer(request_id: str, produced_at: int, degraded: bool = False) -> Recommendation:
    return Recommendation(request_id, 1, [], "m", None, produced_at, degraded)


def test_lost_and_duplicated_count_against_what_was_sent() -> None:
    ledger = Ledger("eo", exactly_once=True, sent={"a": 0, "b": 0, "c": 0})
    ledger.answers = [answer("a", 5), answer("a", 6), answer("a", 7), answer("b", 5)]
    assert ledger.lost == 1  # c
    assert ledger.duplicated == 2  # a twice more


def test_poison_without_a_byte_exact_dead_letter_is_missing() -> None:
    ledger = Ledger("eo", exactly_once=True)
    ledger.poison_sent = Counter({b"x": 2, b"y": 1})
    ledger.dead_letters = Counter({b"x": 1, b"y": 3, b"y-cut": 1})
    assert ledger.dead_letters_missing == 1  # one x


def test_a_fault_window_reports_its_requests_tail_and_recovery() -> None:
    sent = {"before": 0, "in1": 100, "in2": 150, "after-degraded": 300, "after": 400}
    answers = [
        answer("before", 10),
        answer("in1", 140, degraded=True),
        answer("in2", 1150),
        answer("after-degraded", 310, degraded=True),
        answer("after", 420),
    ]
    report = fault_report(FaultWindow("f", 100, 200), sent, answers)
    assert (report.asked, report.degraded) == (2, 1)
    assert report.p99_ms == 1000
    assert report.recovered_ms == 220  # the first undegraded answer after the window


def test_a_request_lost_in_a_window_makes_its_tail_infinite_and_no_recovery_is_inf() -> None:
    report = fault_report(FaultWindow("f", 0, 10), {"a": 5}, [])
    assert math.isinf(report.p99_ms) and math.isinf(report.recovered_ms)


def test_the_baseline_leaves_out_the_requests_the_first_fault_could_catch() -> None:
    window = baseline_window(loaded_at_ms=1_000, first_fault_ms=21_000)
    assert (window.started_ms, window.ended_ms) == (1_000, 16_000)
    # Sent in the guard, answered only after the fault that followed: not the baseline's.
    sent = {"early": 2_000, "caught": 20_500}
    answers = [answer("early", 2_050), answer("caught", 60_000)]
    report = fault_report(window, sent, answers)
    assert (report.asked, report.p99_ms) == (1, 50)
    # A short load keeps at least its first half.
    assert baseline_window(0, 4_000).ended_ms == 2_000


def test_totals_split_duplicates_by_mode_and_pass_only_on_every_goal() -> None:
    eo = Ledger("eo", True, sent={"a": 0}, answers=[answer("a", 1)])
    alo = Ledger("alo", False, sent={"b": 0}, answers=[answer("b", 1), answer("b", 2)])
    result = totals([eo, alo], unit_fuzz_inputs=20_000)
    assert (result.duplicated_exactly_once, result.duplicated_at_least_once) == (0, 1)
    assert result.requests == 2 and result.answered == 2 and result.passed
    assert not totals([eo, alo], unit_fuzz_inputs=19_999).passed
    eo.crashed.append("worker: exit 1")
    assert not totals([eo], unit_fuzz_inputs=20_000).passed


def test_the_at_least_once_duplicate_bound_grows_with_faults_and_exactly_once_allows_none() -> None:
    windows = [FaultWindow("a", 0, 1), FaultWindow("b", 2, 3)]
    alo = Ledger("alo", False, faults=list(windows))
    assert alo.duplicate_bound(batch_size=128, rate=200, commit_interval_s=0.5) == 2 * 356
    assert Ledger("eo", True, faults=list(windows)).duplicate_bound(128, 200, 0.5) == 0
