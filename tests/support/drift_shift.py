"""Shifts injected into feature rows, to show the drift watch flags them and only them.

Each shift rewrites changelog rows the way a real change upstream would, and
names the drift columns it is meant to move:

- ``category_mix``: the most frequent categories trade places with rare ones
  (a one-to-one swap), as when a catalogue re-labels or a campaign moves
  traffic. Which categories users and items fall in changes; how focused a
  user is (top-category share, distinct categories) and every count do not.
- ``longer_sequences``: each user window holds ``factor`` times its events
  (each event repeated a second apart, counts multiplied), as when users get
  more active. Length and event counts change; conversion (buys per view),
  category mix and item windows do not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from schemas.features import (
    FeatureUpdate,
    UserRecentEvents,
    UserWindow,
    pack_event,
    unpack_events,
)
from schemas.records import BehaviorEvent

SHIFTS = ("category_mix", "longer_sequences")
# The drift columns each shift is built to move; every other column must stay quiet.
SHIFTED_COLUMNS: dict[str, tuple[str, ...]] = {
    "category_mix": ("user_top_category", "item_category"),
    "longer_sequences": ("user_seq_length", "user_window_events"),
}
from schemas.windows import SEQUENCE_LIMIT  # noqa: E402


@dataclass(frozen=True)
class Shift:
    """Which shifts to apply, and how strongly."""

    names: tuple[str, ...] = SHIFTS
    swapped_categories: int = 10
    factor: int = 3

    def __post_init__(self) -> None:
        unknown = set(self.names) - set(SHIFTS)
        if unknown:
            raise ValueError(f"unknown shift(s) {sorted(unknown)}; choose from {SHIFTS}")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(column for name in self.names for column in SHIFTED_COLUMNS[name])


def category_swap(events: Iterable[BehaviorEvent], count: int) -> dict[int, int]:
    """The ``count`` most frequent categories paired one-to-one with the rarest ones."""
    ranked = [category for category, _ in Counter(e.category_id for e in events).most_common()]
    count = min(count, len(ranked) // 2)
    popular, rare = ranked[:count], ranked[-count:][::-1] if count else []
    swap = dict(zip(popular, rare, strict=True))
    return swap | {b: a for a, b in swap.items()}


def shift_rows(
    rows: Sequence[FeatureUpdate], shift: Shift, swap: Mapping[int, int]
) -> list[FeatureUpdate]:
    """``rows`` with the shift applied (pure; the order is kept)."""
    shifted = list(rows)
    if "category_mix" in shift.names:
        shifted = [_swap_categories(row, swap) for row in shifted]
    if "longer_sequences" in shift.names:
        shifted = [_lengthen(row, shift.factor) for row in shifted]
    return shifted


def _repack(packed: list[str], swap: Mapping[int, int]) -> list[str]:
    return [
        pack_event(e.ts, e.item_id, swap.get(e.category_id, e.category_id), e.behavior)
        for e in unpack_events(packed)
    ]


def _swap_categories(row: FeatureUpdate, swap: Mapping[int, int]) -> FeatureUpdate:
    if isinstance(row, UserWindow | UserRecentEvents):
        return msgspec.structs.replace(row, events=_repack(row.events, swap))
    category = swap.get(row.category_id, row.category_id)  # an item or category window
    return msgspec.structs.replace(row, category_id=category)


def _lengthen(row: FeatureUpdate, factor: int) -> FeatureUpdate:
    if not isinstance(row, UserWindow):
        return row
    events = unpack_events(row.events)
    repeated = sorted(
        pack_event(e.ts - copy * 1000, e.item_id, e.category_id, e.behavior)
        for e in events
        for copy in range(factor)
    )
    return msgspec.structs.replace(
        row,
        events=repeated[-SEQUENCE_LIMIT:],
        pv=row.pv * factor,
        cart=row.cart * factor,
        fav=row.fav * factor,
        buy=row.buy * factor,
    )
