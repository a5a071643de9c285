from schemas.final_list import Scored, finalize


def _scored(*ids: int) -> list[Scored]:
    return [Scored(i, 1.0 - n / 100, "recent", 0) for n, i in enumerate(ids)]


def test_quota_swaps_the_lowest_own_items_for_the_best_new_ones() -> None:
    scored = _scored(1, 2, 3, 4, 50, 60, 70)
    items = finalize(scored, 4, touched={1, 2, 3, 4}, min_new=2)
    assert [i.item_id for i in items] == [1, 2, 50, 60]


def test_quota_met_already_or_nothing_new_changes_nothing() -> None:
    scored = _scored(1, 50, 2, 3)
    assert [i.item_id for i in finalize(scored, 3, touched={1, 2, 3}, min_new=1)] == [1, 50, 2]
    own = _scored(1, 2, 3)
    assert [i.item_id for i in finalize(own, 2, touched={1, 2, 3}, min_new=2)] == [1, 2]


def test_quota_never_brings_back_excluded_items() -> None:
    scored = _scored(1, 2, 50, 60)
    items = finalize(scored, 2, excluded={50}, touched={1, 2}, min_new=1)
    assert [i.item_id for i in items] == [1, 60]
