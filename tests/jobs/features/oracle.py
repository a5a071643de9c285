"""Hand-computed feature rows for a dozen hand-made events: the oracle for the job and reference.

Nothing here is computed by project code: every expected row below was worked
out by hand from the definitions (HOP windows of 10 minutes sliding 5, aligned
to the epoch; the last 3 events of a user in time order; counts per behaviour;
trend score pv + 2 fav + 3 cart + 4 buy; the top 2 items per category, ties
broken by the larger item id; the fresh view as the last 3 arrivals). The
events cover window edges (an event exactly on a slide boundary, one a
millisecond before it), ties (two events in the same millisecond, a duplicate
event), a sequence cut to its limit, a category whose trending items tie, and
a category with more items than the top list keeps.
"""

from __future__ import annotations

from schemas.features import CategoryWindow, ItemWindow, UserRecentEvents, UserWindow
from schemas.records import BehaviorEvent
from schemas.reference import WindowSpec

MIN = 60_000
T = 1_511_654_400_000  # 2017-11-26 00:00:00 UTC, on a slide boundary
SPEC = WindowSpec(window_ms=10 * MIN, slide_ms=5 * MIN, sequence_length=3, top_items=2)
FLAGS = ["--window-ms", str(10 * MIN), "--slide-ms", str(5 * MIN),
         "--sequence-length", "3", "--top-items", "2"]  # fmt: skip


def ev(user: int, item: int, category: int, behavior: str, ms: int) -> BehaviorEvent:
    return BehaviorEvent(user, item, category, behavior, T + ms)  # type: ignore[arg-type]


E1 = ev(1, 10, 100, "pv", 0)  # exactly on the boundary at T
E6 = ev(2, 11, 100, "pv", 1 * MIN)
E7 = ev(2, 11, 100, "pv", 1 * MIN)  # the same event again, same millisecond
E2 = ev(1, 11, 100, "pv", 5 * MIN - 1)  # a millisecond before the boundary at T+5
E3 = ev(1, 10, 100, "cart", 5 * MIN)  # on the boundary, tied in time with E4
E4 = ev(1, 12, 200, "fav", 5 * MIN)
E5 = ev(1, 10, 100, "buy", 9 * MIN)
E8 = ev(2, 13, 200, "pv", 12 * MIN)
E9 = ev(3, 12, 200, "buy", 15 * MIN - 1)
E10 = ev(4, 30, 300, "pv", 20 * MIN)
E11 = ev(4, 31, 300, "pv", 21 * MIN)
E12 = ev(5, 32, 300, "pv", 22 * MIN)
# Arrival order = time order (one partition, nothing late).
EVENTS = [E1, E6, E7, E2, E3, E4, E5, E8, E9, E10, E11, E12]


def p(event: BehaviorEvent) -> str:
    """The packed form, written out: 13-digit time, item, category, behaviour."""
    return f"{event.ts:013d}:{event.item_id}:{event.category_id}:{event.behavior}"


def m(minutes: int) -> int:
    return T + minutes * MIN


def uw(
    user: int, start: int, events: list[BehaviorEvent], pv: int = 0, cart: int = 0,
    fav: int = 0, buy: int = 0,
) -> UserWindow:  # fmt: skip
    return UserWindow(user, m(start), m(start + 10), [p(e) for e in events], pv, cart, fav, buy)


def iw(
    item: int, category: int, start: int, pv: int = 0, cart: int = 0, fav: int = 0, buy: int = 0
) -> ItemWindow:
    return ItemWindow(item, category, m(start), m(start + 10), pv, cart, fav, buy)


def cw(
    category: int, start: int, top: list[tuple[int, int]], pv: int = 0, cart: int = 0,
    fav: int = 0, buy: int = 0,
) -> CategoryWindow:  # fmt: skip
    packed = [f"{score:010d}:{item:016d}" for score, item in top]
    return CategoryWindow(category, m(start), m(start + 10), pv, cart, fav, buy, packed)


USER_WINDOWS = [
    uw(1, -5, [E1, E2], pv=2),
    # Five events; the last three in time order, E3 before E4 (same ms, item 10 < 12).
    uw(1, 0, [E3, E4, E5], pv=2, cart=1, fav=1, buy=1),
    uw(1, 5, [E3, E4, E5], cart=1, fav=1, buy=1),
    uw(2, -5, [E6, E7], pv=2),
    uw(2, 0, [E6, E7], pv=2),
    uw(2, 5, [E8], pv=1),
    uw(2, 10, [E8], pv=1),
    uw(3, 5, [E9], buy=1),
    uw(3, 10, [E9], buy=1),
    uw(4, 15, [E10, E11], pv=2),
    uw(4, 20, [E10, E11], pv=2),
    uw(5, 15, [E12], pv=1),
    uw(5, 20, [E12], pv=1),
]

ITEM_WINDOWS = [
    iw(10, 100, -5, pv=1),
    iw(10, 100, 0, pv=1, cart=1, buy=1),
    iw(10, 100, 5, cart=1, buy=1),
    iw(11, 100, -5, pv=3),
    iw(11, 100, 0, pv=3),
    iw(12, 200, 0, fav=1),
    iw(12, 200, 5, fav=1, buy=1),
    iw(12, 200, 10, buy=1),
    iw(13, 200, 5, pv=1),
    iw(13, 200, 10, pv=1),
    *(iw(item, 300, start, pv=1) for item in (30, 31, 32) for start in (15, 20)),
]

CATEGORY_WINDOWS = [
    cw(100, -5, [(3, 11), (1, 10)], pv=4),
    cw(100, 0, [(8, 10), (3, 11)], pv=4, cart=1, buy=1),  # 10: 1 + 3 + 4
    cw(100, 5, [(7, 10)], cart=1, buy=1),
    cw(200, 0, [(2, 12)], fav=1),
    cw(200, 5, [(6, 12), (1, 13)], pv=1, fav=1, buy=1),
    cw(200, 10, [(4, 12), (1, 13)], pv=1, buy=1),
    # Three items tied at 1: the two largest ids are kept.
    cw(300, 15, [(1, 32), (1, 31)], pv=3),
    cw(300, 20, [(1, 32), (1, 31)], pv=3),
]


def ur(user: int, latest: BehaviorEvent, events: list[BehaviorEvent]) -> UserRecentEvents:
    return UserRecentEvents(user, latest.ts, [p(e) for e in events])


USER_RECENT = [  # one row per arrival, in arrival order
    ur(1, E1, [E1]),
    ur(2, E6, [E6]),
    ur(2, E7, [E6, E7]),
    ur(1, E2, [E1, E2]),
    ur(1, E3, [E1, E2, E3]),
    ur(1, E4, [E2, E3, E4]),
    ur(1, E5, [E3, E4, E5]),
    ur(2, E8, [E6, E7, E8]),
    ur(3, E9, [E9]),
    ur(4, E10, [E10]),
    ur(4, E11, [E10, E11]),
    ur(5, E12, [E12]),
]
