"""Judging the loop's answers against its requests (pure)."""

from __future__ import annotations

from jobs.demo.outcome import (
    Answered,
    Asked,
    after_warm_up,
    judge,
    outcome_lines,
    outcome_result,
    p99_by_slice,
    percentiles,
)
from schemas.records import RecItem, Recommendation, RecRequest


def asked(request_id: str, sent_ms: int = 1_000) -> Asked:
    return Asked(RecRequest(request_id=request_id, user_id=7, ts=sent_ms), sent_ms)


def answered(
    request_id: str, received_ms: int, degraded: bool = False, trigger: str | None = None
) -> Answered:
    rec = Recommendation(
        request_id=request_id, user_id=7, model_version="3", features_at=received_ms - 500,
        produced_at=received_ms, degraded=degraded,
        degraded_reasons=["triton: unavailable"] if degraded else [],
        items=[RecItem(item_id=1, score=0.5, route="embedding"),
               RecItem(item_id=2, score=0.4, route="popular")],
        trigger_features=trigger,  # type: ignore[arg-type]
    )  # fmt: skip
    return Answered(rec, received_ms)


def test_every_request_answered_once_is_exact() -> None:
    outcome = judge([asked("a"), asked("b")], [answered("a", 1_010), answered("b", 1_030, True)])
    assert outcome.exact
    assert (outcome.requests, outcome.answered, outcome.degraded) == (2, 2, 1)
    # Nearest rank over [10, 30]: index round(0.5 * 1) = 0 (half to even), round(0.99) = 1.
    assert outcome.latency_ms == {"p50": 10.0, "p95": 30.0, "p99": 30.0}
    # answered() makes each answer at its append time: all of it before, none in delivery.
    assert outcome.made_ms == outcome.latency_ms
    assert outcome.delivered_ms == {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    assert outcome.feature_age_ms == {"p50": 500.0, "p95": 500.0, "p99": 500.0}
    assert outcome.routes == {"embedding": 2, "popular": 2}
    assert outcome.degraded_reasons == {"triton: unavailable": 1}
    assert outcome.error_rate == 0.5  # one of two answered degraded


def test_missing_duplicated_and_unknown_answers_are_counted() -> None:
    outcome = judge(
        [asked("a"), asked("b"), asked("c")],
        [answered("a", 1_010), answered("a", 1_020), answered("x", 1_030)],
    )
    assert not outcome.exact
    assert (outcome.missing, outcome.duplicated, outcome.unknown) == (2, 1, 1)
    assert outcome.error_rate == 2 / 3  # b and c never answered
    assert outcome.answered == 1


def test_percentiles_are_nearest_rank() -> None:
    assert percentiles([]) == {}
    assert percentiles(list(range(101))) == {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def test_the_tail_is_given_per_slice_of_the_run_from_the_first_send() -> None:
    assert p99_by_slice([], 10_000) == []
    sends = [(5_000, 8.0), (14_999, 40.0), (15_000, 12.0), (40_000, 300.0)]
    # Slices from 5 s: [5, 15) holds two, [15, 25) one, [25, 35) none (left out), [35, 45) one.
    assert p99_by_slice(sends, 10_000) == [40.0, 12.0, 300.0]
    outcome = judge([asked("a", 1_000), asked("b", 20_000)],
                    [answered("a", 1_010), answered("b", 20_050)])  # fmt: skip
    assert outcome.p99_by_slice_ms == [10.0, 50.0]


def test_the_warm_figure_leaves_out_the_first_seconds_of_the_run() -> None:
    sends = [("a", 1_000, 900), ("b", 30_999, 800), ("c", 31_000, 20), ("d", 45_000, 30)]
    matched = [(asked(r, sent), answered(r, sent + lat)) for r, sent, lat in sends]
    assert after_warm_up([(sent, lat) for _, sent, lat in sends]) == [20.0, 30.0]
    assert after_warm_up([]) == []
    outcome = judge([a for a, _ in matched], [b for _, b in matched])
    assert outcome.latency_ms["p99"] == 900.0
    assert outcome.warm_latency_ms == {"p50": 20.0, "p95": 30.0, "p99": 30.0}


def test_lines_name_every_figure() -> None:
    lines = "\n".join(outcome_lines(judge([asked("a")], [answered("a", 1_010, True)])))
    assert "requests produced / answered    1 / 1" in lines
    assert "degraded because" in lines
    assert "p99 ms per 10 s of the run      10" in lines


def test_answers_are_counted_by_whether_their_features_had_the_trigger() -> None:
    outcome = judge(
        [asked("a"), asked("b"), asked("c"), asked("d")],
        [answered("a", 1_010, trigger="store"), answered("b", 1_010, trigger="folded"),
         answered("c", 1_010, trigger="folded"), answered("d", 1_010)],
    )  # fmt: skip
    assert outcome.trigger_features == {"folded": 2, "store": 1}
    lines = "\n".join(outcome_lines(outcome))
    assert "trigger click in features       folded=2, store=1" in lines


def test_the_result_line_carries_the_spread_and_the_error_rate() -> None:
    outcome = judge(
        [asked("a", 1_000), asked("b", 1_000), asked("c", 1_000), asked("d", 1_000)],
        [answered("a", 1_010), answered("b", 1_020), answered("c", 1_040, degraded=True)],
    )
    # 3 answered of 4: one missing, one degraded; latencies 10, 20, 40 ms.
    assert outcome_result(outcome) == (
        "RESULT p50_ms=20 p95_ms=40 p99_ms=40 error_rate_pct=50.0000 requests=4"
    )
