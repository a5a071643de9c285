import numpy as np

from schemas.ranking import SEQ_LEN
from tests.benchmarks.cold_calls import model_inputs, timed_calls


def test_inputs_have_the_served_shapes_and_valid_ids() -> None:
    feed = model_inputs(users=3, candidates=100, num_items=50, num_categories=7)
    assert feed["seq_items"].shape == (3, SEQ_LEN)
    assert feed["cand_dense"].shape == (3, 100, 5)
    assert feed["user_dense"].shape == (3, 4)
    for name in ("seq_items", "cand_items"):
        assert feed[name].dtype == np.int32 and feed[name].min() >= 2 and feed[name].max() < 50
    for name in ("seq_cats", "cand_cats"):
        assert feed[name].min() >= 2 and feed[name].max() < 7


def test_each_call_is_timed_after_its_pause() -> None:
    seen: list[object] = []
    times = timed_calls(seen.append, {"x": 1}, pause_s=0.002, calls=3)
    assert len(times) == 3 and len(seen) == 3
    assert all(t >= 0 for t in times)
