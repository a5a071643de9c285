"""From scored candidates to the final list (pure): filter, de-duplicate, diversify, top k.

Shared ground: the worker answers with it, and training measures its candidate
lists through it, so a model is judged on the lists users get.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from schemas.records import RecItem, Route

# How many of the ``k`` answers are items the user has not touched, when recall has
# them (the worker's STREAMREC_WORKER_MIN_NEW_ITEMS): returns to viewed items are the
# likeliest next step, and a list of nothing but those never shows anything new.
MIN_NEW_ITEMS = 3


@dataclass(frozen=True)
class Scored:
    item_id: int
    score: float
    route: Route
    category_id: int  # 0 = unknown; unknown categories are not capped


def finalize(
    scored: Sequence[Scored],
    k: int,
    excluded: Collection[int] = (),
    out_of_stock: Collection[int] = (),
    max_per_category: int = 3,
    touched: Collection[int] = (),
    min_new: int = 0,
) -> list[RecItem]:
    """The best ``k`` items, best first.

    Drops ``excluded`` (just bought), ``out_of_stock`` and repeats.
    At most ``max_per_category`` items of one category, unless that leaves fewer
    than ``k`` items: then the best of the capped ones fill the list, so a user
    who only browses one category still gets ``k`` answers. Then at least
    ``min_new`` of the answers are items outside ``touched`` (the user's own), where
    the candidates have them: the best of those replace the lowest touched answers.
    """
    ranked = sorted(scored, key=lambda s: -s.score)  # stable: ties keep recall order
    chosen: list[Scored] = []
    held_back: list[Scored] = []
    seen: set[int] = set()
    per_category: dict[int, int] = {}
    usable: list[Scored] = []
    for item in ranked:
        if item.item_id in seen or item.item_id in excluded or item.item_id in out_of_stock:
            continue
        seen.add(item.item_id)
        usable.append(item)
        if len(chosen) == k:
            continue
        count = per_category.get(item.category_id, 0)
        if item.category_id and count >= max_per_category:
            held_back.append(item)
            continue
        per_category[item.category_id] = count + 1
        chosen.append(item)
    if len(chosen) < k:
        chosen = sorted(chosen + held_back[: k - len(chosen)], key=lambda s: -s.score)
    if min_new:
        chosen = _with_new_items(chosen, usable, touched, min(min_new, k))
    return [RecItem(item_id=s.item_id, score=s.score, route=s.route) for s in chosen]


def _with_new_items(
    chosen: list[Scored], usable: Sequence[Scored], touched: Collection[int], min_new: int
) -> list[Scored]:
    new_count = sum(1 for s in chosen if s.item_id not in touched)
    if new_count >= min_new:
        return chosen
    picked = {s.item_id for s in chosen}
    extra = [s for s in usable if s.item_id not in touched and s.item_id not in picked]
    extra = extra[: min_new - new_count]
    if not extra:
        return chosen
    own = [s for s in chosen if s.item_id in touched]
    new = [s for s in chosen if s.item_id not in touched]
    keep = own[: max(len(own) - len(extra), 0)]
    return sorted(keep + new + extra, key=lambda s: -s.score)
