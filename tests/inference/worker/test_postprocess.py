from __future__ import annotations

from inference.worker.postprocess import Scored, fallback_scores, finalize


def scored(*rows: tuple[int, float, int]) -> list[Scored]:
    return [Scored(item, score, "embedding", category) for item, score, category in rows]


def test_drops_excluded_out_of_stock_and_duplicates_then_takes_top_k() -> None:
    rows = scored((1, 0.9, 0), (2, 0.8, 0), (3, 0.7, 0), (2, 0.6, 0), (4, 0.5, 0), (5, 0.4, 0))
    items = finalize(rows, k=2, excluded={1}, out_of_stock={3})
    assert [(i.item_id, i.score) for i in items] == [(2, 0.8), (4, 0.5)]


def test_caps_items_per_category_while_others_exist() -> None:
    rows = scored((1, 0.9, 7), (2, 0.8, 7), (3, 0.7, 7), (4, 0.1, 8))
    assert [i.item_id for i in finalize(rows, k=3, max_per_category=2)] == [1, 2, 4]


def test_capped_items_fill_the_list_when_nothing_else_is_left() -> None:
    rows = scored((1, 0.9, 7), (2, 0.8, 7), (3, 0.7, 7))
    assert [i.item_id for i in finalize(rows, k=3, max_per_category=1)] == [1, 2, 3]


def test_route_is_kept() -> None:
    rows = [Scored(1, 0.5, "trend", 0), Scored(2, 0.6, "request", 0)]
    assert [(i.item_id, i.route) for i in finalize(rows, k=5)] == [(2, "request"), (1, "trend")]


def test_fallback_orders_by_trend_then_popularity_then_route() -> None:
    scores = fallback_scores(
        [50.0, 0.0, 0.0, 0.0],
        ["popular", "popular", "popular", "request"],
        [None, 0, 5, None],
    )
    assert scores[0] > scores[1] > scores[2] > scores[3] > 0
    assert all(0 < s < 1 for s in scores)
