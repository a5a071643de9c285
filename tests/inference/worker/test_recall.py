from __future__ import annotations

import numpy as np

from inference.worker.recall import (
    ROUTE_ORDER,
    Candidate,
    EmbeddingIndex,
    covisit_items,
    merge_routes,
    recent_categories,
    recent_items,
    trend_items,
    user_routes,
)


def test_merge_keeps_the_first_route_of_each_item_in_priority_order() -> None:
    routes = user_routes([5, 6], embedding=[6, 7], trend=[7, 8], popular=[9])
    merged = merge_routes(routes, limit=10, min_count=0)
    assert merged == [
        Candidate(5, "request"),
        Candidate(6, "request"),
        Candidate(7, "embedding"),
        Candidate(8, "trend"),
    ]


def test_popular_tops_up_short_lists_and_answers_cold_users() -> None:
    short = merge_routes(user_routes(None, [1], [], [1, 2, 3, 4]), limit=10, min_count=3)
    assert short == [Candidate(1, "embedding"), Candidate(2, "popular"), Candidate(3, "popular")]
    cold = merge_routes(user_routes(None, [], [], [7, 8]), limit=10, min_count=0)
    assert cold == [Candidate(7, "popular"), Candidate(8, "popular")]


def test_merge_stops_at_the_limit() -> None:
    merged = merge_routes(user_routes(list(range(1, 50)), [], [], []), limit=10)
    assert [c.item_id for c in merged] == list(range(1, 11))


def test_recent_categories_are_distinct_and_most_recent_first() -> None:
    assert recent_categories([1, 2, 1, 3, 3, 0], limit=2) == [3, 1]


def test_trend_items_interleave_categories_without_repeats() -> None:
    assert trend_items([[1, 2, 3], [4, 1, 5]], limit=5) == [1, 4, 2, 3, 5]


def test_embedding_index_finds_neighbours_of_recent_clicks() -> None:
    # Rows 0 and 1 are pad and OOV; raw ids 100..103 are rows 2..5.
    embeddings = np.array(
        [[0, 0], [0, 0], [1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32
    )
    index = EmbeddingIndex(embeddings, np.array([100, 101, 102, 103]))
    found = index.search([np.array([2], np.int32), np.array([1, 0], np.int32)], k=2)
    assert found == [[100, 101], []]  # the OOV-only user gets nothing from this route


def test_a_click_on_an_unseen_item_queries_with_its_categorys_centroid() -> None:
    embeddings = np.array(
        [[0, 0], [0, 0], [1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32
    )
    # Items 100, 101 are category 7; 102, 103 category 8 (rows 0 and 1 have none).
    categories = np.array([0, 0, 7, 7, 8, 8], dtype=np.int64)
    index = EmbeddingIndex(embeddings, np.array([100, 101, 102, 103]), categories)
    oov_click = [np.array([1], np.int32)]
    # Category 8's centroid is (0.05, 0.95): nearest are 102 then 103.
    assert index.search(oov_click, k=2, click_categories=[[8]]) == [[102, 103]]
    # An unknown category, or none given, leaves the user to the other routes.
    assert index.search(oov_click, k=2, click_categories=[[9]]) == [[]]
    assert index.search(oov_click, k=2) == [[]]
    # Known clicks keep their own embedding: the query mixes both kinds.
    vectors, users = index.query_vectors([np.array([2, 1], np.int32)], [[7, 8]])
    assert users == [0]
    np.testing.assert_allclose(vectors[0], [(1 + 0.05) / 2, (0 + 0.95) / 2], rtol=1e-6)


def test_covisit_sums_the_clicked_items_lists_and_leaves_out_excluded_items() -> None:
    # Last click 1's neighbours, then older click 2's; 5 was just viewed (excluded).
    lists = [[(7, 3.0), (8, 2.0), (5, 9.0)], [(8, 2.0), (9, 3.0), (6, 1.0)]]
    # 8: 2 + 2 = 4; 7 and 9 tie at 3, 7 seen first; then 6.
    assert covisit_items(lists, limit=10, excluded={5}) == [8, 7, 9, 6]
    assert covisit_items(lists, limit=2, excluded={5}) == [8, 7]
    assert covisit_items([], limit=5) == []


def test_recent_items_are_distinct_and_most_recent_first() -> None:
    assert recent_items([4, 1, 2, 1, 3], limit=3) == [3, 1, 2]
    assert recent_items([4, 1], limit=0) == []


def test_covisit_comes_after_the_request_and_before_the_embedding() -> None:
    assert ROUTE_ORDER == ("request", "covisit", "recent", "embedding", "trend", "popular")
    routes = user_routes([5], embedding=[6, 7], trend=[8], popular=[9], covisit=[7, 5, 10])
    merged = merge_routes(routes, limit=5, min_count=0)
    assert merged == [
        Candidate(5, "request"),
        Candidate(7, "covisit"),
        Candidate(10, "covisit"),
        Candidate(6, "embedding"),
        Candidate(8, "trend"),
    ]
