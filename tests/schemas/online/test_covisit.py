"""Co-visitation's shared ground: key names, the visit of a fresh row, decoding reads (pure)."""

from __future__ import annotations

import pytest

from schemas.features import pack_event
from schemas.online.covisit import (
    Visit,
    decode_neighbours,
    neighbours_key,
    newest_visit,
    seen_key,
)
from schemas.windows import WINDOW_MS

T0 = 1_700_000_000_000
MINUTE = 60_000


def clicks(*pairs: tuple[int, int]) -> list[str]:
    """Packed events of ``(minutes before T0, item)``, in the order given."""
    return [pack_event(T0 - minutes * MINUTE, item, 3, "pv") for minutes, item in pairs]


def test_keys_are_namespaced_by_project() -> None:
    assert neighbours_key(42, "p") == b"p:covisit:42"
    assert seen_key(7, "p") == b"p:covisit:seen:7"


def test_newest_click_pairs_with_the_distinct_earlier_items_of_the_window() -> None:
    # 40 min before is outside the 30-minute window; item 7 twice counts once.
    events = clicks((20, 7), (0, 11), (40, 5), (5, 7), (10, 9))
    visit = newest_visit(events, WINDOW_MS)
    assert visit == Visit(ts=T0, item_id=11, earlier=(7, 9))
    assert visit.pairs() == [(11, 7), (7, 11), (11, 9), (9, 11)]


def test_window_edge_is_exclusive_like_the_fresh_view_horizon() -> None:
    events = [pack_event(T0 - WINDOW_MS, 1, 3, "pv"), pack_event(T0 - WINDOW_MS + 1, 2, 3, "cart")]
    events.append(pack_event(T0, 3, 3, "buy"))
    visit = newest_visit(events, WINDOW_MS)
    assert visit is not None and visit.earlier == (2,)


def test_equal_times_take_the_larger_item_as_newest() -> None:
    # String order would put "99" after "100"; the guard compares numbers.
    visit = newest_visit(clicks((0, 99), (0, 100)), WINDOW_MS)
    assert visit == Visit(T0, 100, (99,))


def test_clicking_the_same_item_again_pairs_with_nothing_new() -> None:
    assert newest_visit(clicks((1, 11), (0, 11)), WINDOW_MS) == Visit(T0, 11, ())
    assert newest_visit([], WINDOW_MS) is None


@pytest.mark.parametrize("bad", [f"{T0}:x:1:pv", "garbage", f"{T0 // 10}:1:1:pv"])
def test_malformed_events_in_the_window_raise(bad: str) -> None:
    with pytest.raises(ValueError):
        newest_visit([bad], WINDOW_MS)


def test_decoded_neighbours_skip_foreign_members() -> None:
    assert decode_neighbours([(b"5", 3.0), (b"junk", 2.0), (b"8", 1.0)]) == [(5, 3.0), (8, 1.0)]
