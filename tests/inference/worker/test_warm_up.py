"""The warm-up's made-up batches (inference/worker/warm_up.py); the loop's use of them is
in test_worker_loop.py."""

from __future__ import annotations

import numpy as np

from inference.worker.artifacts import ModelArtifacts
from inference.worker.warm_up import (
    WARM_UP_USER,
    WarmedUp,
    popular_click,
    warm_up_requests,
    warm_up_sizes,
)
from schemas.ranking import FIRST_ID_INDEX, Vocabulary


def artifacts(popular: tuple[int, ...]) -> ModelArtifacts:
    # Items 5 and 9 of categories 70 and 90.
    return ModelArtifacts(
        Vocabulary.build([5, 9], [70, 90]),
        np.zeros((FIRST_ID_INDEX + 2, 2), np.float32),
        np.array([0] * FIRST_ID_INDEX + [70, 90], np.int64),
        popular,
    )


def test_sizes_double_from_one_and_stop_at_the_batch_size() -> None:
    assert warm_up_sizes(4, 128) == [1, 2, 4, 8]
    assert warm_up_sizes(4, 3) == [1, 2, 3, 3]
    assert warm_up_sizes(0, 128) == []


def test_the_trigger_is_a_click_on_the_most_popular_item_in_its_category() -> None:
    click = popular_click(artifacts((9, 5)), 1_700_000_000_000)
    assert click is not None
    assert (click.user_id, click.item_id, click.category_id) == (WARM_UP_USER, 9, 90)
    assert click.behavior == "pv" and click.ts == 1_700_000_000_000
    assert popular_click(artifacts(()), 1) is None


def test_every_request_is_the_warm_up_users_with_the_trigger() -> None:
    click = popular_click(artifacts((5,)), 1_700_000_000_000)
    made = warm_up_requests(3, click)
    assert [r.request_id for r in made] == ["warm-up-0", "warm-up-1", "warm-up-2"]
    assert all(r.user_id == WARM_UP_USER and r.trigger == click for r in made)
    assert all(r.candidates is None for r in made)  # recalled, not given
    assert [r.trigger for r in warm_up_requests(1, None)] == [None]


def test_the_log_line_says_what_ran_and_what_stopped_it() -> None:
    assert WarmedUp(4, 15, 0.0421).line() == "4 batches, 15 requests in 42 ms"
    stopped = WarmedUp(1, 1, 1.0, ("triton_timeout",)).line()
    assert stopped == "1 batches, 1 requests in 1000 ms; stopped: triton_timeout"
