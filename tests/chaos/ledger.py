"""What a chaos run sent, what came back, and what that says about each fault (pure).

A request is *lost* when no answer carries its id, *duplicated* once for every
answer past the first. A fault's window runs from the moment it was injected to
the moment the faulty part was back (ready, or resumed); the answers to requests
sent inside it are the ones the fault could touch, and the first undegraded
answer to a request sent after it says how fast the pipeline recovered.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from schemas.records import Recommendation
from tests.benchmarks.report import percentile


@dataclass(frozen=True)
class FaultWindow:
    name: str
    started_ms: int
    ended_ms: int  # the part was back (ready again, or resumed)


# How much of the quiet load before the first fault the baseline leaves out: a
# request sent just before the fault is answered during it, and would charge the
# fault's cost to the baseline (a 20 s broker outage showed as a 40 s baseline p99).
BASELINE_GUARD_MS = 5_000


def baseline_window(loaded_at_ms: int, first_fault_ms: int) -> FaultWindow:
    """The load before the first fault, less its last ``BASELINE_GUARD_MS`` (at most
    half of it). Its "normal again" is then the first undegraded answer to a request
    sent in the guard: how the pipeline answered with no fault at all."""
    guard = min(BASELINE_GUARD_MS, (first_fault_ms - loaded_at_ms) // 2)
    return FaultWindow("none (baseline)", loaded_at_ms, first_fault_ms - guard)


@dataclass(frozen=True)
class FaultReport:
    name: str
    asked: int  # requests sent inside the window
    degraded: int  # of their answers, how many were flagged
    p99_ms: float  # request → answer, for requests sent inside the window
    recovered_ms: float  # window end → first undegraded answer to a later request (inf: none)


@dataclass
class Ledger:
    """One pass: requests sent (id → send time), answers seen, poison and its dead letters."""

    name: str
    exactly_once: bool
    sent: dict[str, int] = field(default_factory=dict)
    answers: list[Recommendation] = field(default_factory=list)
    poison_sent: Counter[bytes] = field(default_factory=Counter)
    dead_letters: Counter[bytes] = field(default_factory=Counter)  # originals found in the DLQs
    faults: list[FaultWindow] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)  # "<part>: exit <code>"
    restarts: int = 0  # exits asking for a restart (the worker's 75), answered by the supervisor
    # Dead letters of no poison sent: valid requests refused (a goal: none), by reason.
    unexpected_dead_letters: Counter[str] = field(default_factory=Counter)
    # Valid events the feature job dead-lettered as late (behind its watermark): the
    # contract for late events, so counted apart; replayable from the DLQ.
    late_events: int = 0
    baseline: FaultWindow | None = None  # the load before the first fault
    store_losses: list[str] = field(default_factory=list)  # keys or marks gone after a restart

    @property
    def answered(self) -> Counter[str]:
        return Counter(answer.request_id for answer in self.answers)

    @property
    def lost(self) -> int:
        answered = self.answered
        return sum(1 for request_id in self.sent if request_id not in answered)

    @property
    def duplicated(self) -> int:
        return sum(count - 1 for count in self.answered.values() if count > 1)

    def duplicate_bound(self, batch_size: int, rate: float, commit_interval_s: float) -> float:
        """At-least-once: what each fault may duplicate, all faults together.

        A worker that stops uncleanly replays what it answered but had not committed:
        the batch being delivered, the next one gathered meanwhile, and what the
        background commit had not yet sent (``rate`` × its interval). Exactly-once: 0.
        """
        if self.exactly_once:
            return 0.0
        return len(self.faults) * (2 * batch_size + rate * commit_interval_s)

    @property
    def dead_letters_missing(self) -> int:
        """Poison sent that no dead letter carries byte for byte."""
        return sum((self.poison_sent - self.dead_letters).values())

    def fault_reports(self) -> list[FaultReport]:
        windows = [self.baseline] if self.baseline else []
        return [fault_report(window, self.sent, self.answers) for window in windows + self.faults]


def fault_report(
    window: FaultWindow, sent: dict[str, int], answers: Iterable[Recommendation]
) -> FaultReport:
    inside = {rid for rid, at in sent.items() if window.started_ms <= at <= window.ended_ms}
    latencies: list[float] = []
    degraded = 0
    recovered = math.inf
    for answer in answers:
        asked_at = sent.get(answer.request_id)
        if asked_at is None:
            continue
        if answer.request_id in inside:
            latencies.append(answer.produced_at - asked_at)
            degraded += answer.degraded
        elif asked_at > window.ended_ms and not answer.degraded:
            recovered = min(recovered, answer.produced_at - window.ended_ms)
    missing = len(inside) - len(set(inside) & {a.request_id for a in answers})
    p99 = percentile([*latencies, *[math.inf] * missing], 99)
    return FaultReport(window.name, len(inside), degraded, p99, recovered)


@dataclass(frozen=True)
class Totals:
    requests: int
    answered: int
    lost: int
    duplicated_exactly_once: int
    duplicated_at_least_once: int
    faults: int
    fuzz_inputs: int
    crashed: int
    dead_letters_missing: int
    valid_dead_lettered: int
    late_events: int
    store_losses: int

    @property
    def passed(self) -> bool:
        return (
            not (
                self.lost
                or self.duplicated_exactly_once
                or self.crashed
                or self.dead_letters_missing
                or self.valid_dead_lettered
                or self.store_losses
            )
            and self.fuzz_inputs >= 20_000
        )

    def result(self) -> dict[str, float | str]:
        """The RESULT line's fields, in the order the issue names them."""
        return {
            "requests": self.requests,
            "answered": self.answered,
            "lost": self.lost,
            "duplicated_exactly_once": self.duplicated_exactly_once,
            "duplicated_at_least_once": self.duplicated_at_least_once,
            "faults": self.faults,
            "fuzz_inputs": self.fuzz_inputs,
            "crashed": self.crashed,
            "dead_letters_missing": self.dead_letters_missing,
        }


def totals(ledgers: Sequence[Ledger], unit_fuzz_inputs: int) -> Totals:
    """Every pass together; poison sent through the running pipeline counts as fuzz input."""
    return Totals(
        requests=sum(len(ledger.sent) for ledger in ledgers),
        answered=sum(len(set(ledger.answered) & set(ledger.sent)) for ledger in ledgers),
        lost=sum(ledger.lost for ledger in ledgers),
        duplicated_exactly_once=sum(ledger.duplicated for ledger in ledgers if ledger.exactly_once),
        duplicated_at_least_once=sum(
            ledger.duplicated for ledger in ledgers if not ledger.exactly_once
        ),
        faults=sum(len(ledger.faults) for ledger in ledgers),
        fuzz_inputs=unit_fuzz_inputs + sum(ledger.poison_sent.total() for ledger in ledgers),
        crashed=sum(len(ledger.crashed) for ledger in ledgers),
        dead_letters_missing=sum(ledger.dead_letters_missing for ledger in ledgers),
        valid_dead_lettered=sum(ledger.unexpected_dead_letters.total() for ledger in ledgers),
        late_events=sum(ledger.late_events for ledger in ledgers),
        store_losses=sum(len(ledger.store_losses) for ledger in ledgers),
    )
