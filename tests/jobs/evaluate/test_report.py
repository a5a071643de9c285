"""The evaluation's figures from answers and truth, and the prefix's materialized changelog."""

from __future__ import annotations

import math

import pytest

from jobs.evaluate.materialize import prefix_updates
from jobs.evaluate.report import (
    evaluate_variant,
    fresh_share,
    hourly_hits,
    popular_result,
    popular_share,
    result_line,
    side_by_side,
)
from jobs.evaluate.truth import Truth
from schemas.features import CategoryWindow, ItemWindow, UserRecentEvents, UserWindow
from schemas.records import BehaviorEvent, RecItem, Recommendation, TriggerFeatures

T = 1_700_000_000_000
MIN = 60_000


def rec(
    request_id: str,
    items: list[int],
    route: str = "embedding",
    trigger: TriggerFeatures | None = "store",
    degraded: bool = False,
) -> Recommendation:
    return Recommendation(
        request_id, 1, [RecItem(i, 1.0, route) for i in items], "m", None, T,  # type: ignore[arg-type]
        degraded=degraded, trigger_features=trigger,
    )  # fmt: skip


def test_a_variant_is_scored_on_every_request_missing_answers_as_misses() -> None:
    truths = [Truth(frozenset({1}), frozenset({1})), Truth(frozenset({2}), frozenset())]
    answers = {"r0": rec("r0", [1, 3], degraded=True)}  # r1 never answered
    result = evaluate_variant("stream", ["r0", "r1"], truths, answers)
    assert (result.answered, result.degraded) == (1, 1)
    assert result.any_item.hit == 0.5 and result.any_item.judged == 2
    assert result.new_item.hit == 1.0 and result.new_item.judged == 1


def test_popular_answers_everyone_the_same_top_ten() -> None:
    truths = [Truth(frozenset({10}), frozenset()), Truth(frozenset({11}), frozenset({11}))]
    result = popular_result(list(range(1, 12)), truths)  # 11 is 11th: outside the top ten
    assert result.any_item.hit == 0.5 and result.new_item.hit == 0.0


def test_fresh_and_popular_shares() -> None:
    answers = {
        "a": rec("a", [1, 2], trigger="store"),
        "b": rec("b", [3], route="popular", trigger="folded"),
        "c": rec("c", [4], trigger="missing"),
    }
    assert fresh_share(answers) == pytest.approx(2 / 3)
    assert popular_share(answers) == pytest.approx(1 / 4)
    assert fresh_share({}) == 0.0 and popular_share({}) == 0.0


def test_hourly_hits_bucket_by_event_time_and_skip_unjudged_hours() -> None:
    truths = [Truth(frozenset({1}), frozenset()), Truth(frozenset({2}), frozenset()),
              Truth(frozenset(), frozenset())]  # fmt: skip
    times = [T, T + 30 * MIN, T + 125 * MIN]
    assert hourly_hits([[1], [3], [9]], truths, times, T) == {0: 0.5}


def test_result_line_names_every_goal_figure() -> None:
    truths = [Truth(frozenset({1}), frozenset())]
    results = {"stream": evaluate_variant("stream", ["r"], truths, {"r": rec("r", [1])}),
               "popular": popular_result([5], truths)}  # fmt: skip
    line = result_line(results, 0.995, 0.1, 1, (1.2, 1.1, 1.3))
    assert line == (
        "RESULT hit_at_10=1.0000 ndcg_at_10=1.0000 new_item_hit_at_10=0.0000 "
        "batch_hit_at_10=n/a popular_hit_at_10=0.0000 popular_ndcg_at_10=0.0000 "
        "norank_hit_at_10=n/a norank_ndcg_at_10=n/a recent_first_hit_at_10=n/a "
        "recent_first_ndcg_at_10=n/a hit_ratio_vs_norank=1.2000 hit_ratio_low=1.1000 "
        "hit_ratio_high=1.3000 fresh_answers=0.9950 popular_share=0.1000 answers=1"
    )


def test_the_paired_hit_ratio_and_its_interval() -> None:
    from jobs.evaluate.report import paired_hit_ratio

    ratio, low, high = paired_hit_ratio([1.0] * 40, [1.0] * 20 + [0.0] * 20)
    assert ratio == 2.0 and low <= 2.0 <= high
    assert all(math.isnan(v) for v in paired_hit_ratio([1.0], [0.0]))


def test_the_prefix_keeps_each_entitys_newest_window_closed_by_the_cut() -> None:
    # Windows are 30 min sliding 5: a click at 0 lies in windows ending at 5, 10, ... 30 min.
    base = T - T % (5 * MIN)
    prefix = [
        BehaviorEvent(1, 7, 3, "pv", base + MIN),
        BehaviorEvent(2, 7, 3, "cart", base + 2 * MIN),
    ]
    cut = base + 12 * MIN  # windows ending at 5 and 10 min have closed; 15+ have not
    updates = prefix_updates(prefix, cut)
    users = [u for u in updates if isinstance(u, UserWindow)]
    assert sorted((u.user_id, u.window_end) for u in users) == [(1, base + 10 * MIN),
                                                                 (2, base + 10 * MIN)]  # fmt: skip
    items = [u for u in updates if isinstance(u, ItemWindow)]
    assert [(i.item_id, i.window_end, i.pv, i.cart) for i in items] == [(7, base + 10 * MIN, 1, 1)]
    assert len([u for u in updates if isinstance(u, CategoryWindow)]) == 1
    # Every click keeps its fresh-view row: each one counts for co-visitation.
    assert len([u for u in updates if isinstance(u, UserRecentEvents)]) == 2


def test_side_by_side_shows_the_first_judged_users_with_enough_clicks() -> None:
    replay = [BehaviorEvent(1, i, 3, "pv", T + i * MIN) for i in range(1, 4)]
    replay.append(BehaviorEvent(2, 9, 3, "pv", T + 5 * MIN))
    truths = [Truth(frozenset({2}), frozenset({2})), Truth(frozenset({3}), frozenset({3})),
              Truth(frozenset(), frozenset()), Truth(frozenset({1}), frozenset())]  # fmt: skip
    ids = ["r0", "r1", "r2", "r3"]
    streaming = {r: rec(r, [3, 8]) for r in ids}
    batch = {r: rec(r, [8]) for r in ids}
    lines = side_by_side(replay, [0, 1, 2, 3], ids, truths, streaming, batch, clicks=2)
    # r0 has one click before it; r1 is user 1's first with two; user 2 has one click only.
    assert lines == [
        "user 1, request r1:",
        "  clicks   1/pv 2/pv",
        "  stream   3* 8",
        "  batch    8",
        "  next     3",
        "(* = an item the user touched within the horizon)",
    ]
