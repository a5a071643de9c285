"""Co-visitation in the online store, as shared ground: key names, a click's pairs, reads.

Two items are co-visited when one user clicked both within ``WINDOW_MS`` of each
other. The feature writer counts pairs from the stream: every fresh user row
(``user_recent``, one per event) stands for its newest click, which pairs with
the user's other clicks of the window before it (:func:`newest_visit`). Counts
live in one sorted set per item, symmetric: member = the other item's decimal
id, score = how often the two were co-visited. The writer caps each set to its
top neighbours and gives it a TTL; the worker reads the sets of a user's last
clicks (:func:`queue_neighbour_reads` and :func:`decode_neighbours`, inside its batch's
pipeline; ``runtime.online.redis_store.read_neighbours`` runs them with a client) and
sums them into its ``covisit`` route.

The sets sit beside Feast's hashes, namespaced by the Feast project like the
inventory set (Feast has no sorted-set feature type, and these counts are not
per-entity rows with an event time).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.features import TS_DIGITS
from schemas.views import PROJECT
from schemas.windows import WINDOW_MS

Neighbours = list[tuple[int, float]]


def neighbours_key(item_id: int, project: str = PROJECT) -> bytes:
    """The sorted set of the items co-visited with ``item_id``."""
    return f"{project}:covisit:{item_id}".encode()


def seen_key(user_id: int, project: str = PROJECT) -> bytes:
    """The newest click of ``user_id`` already counted (the writer's replay guard)."""
    return f"{project}:covisit:seen:{user_id}".encode()


@dataclass(frozen=True)
class Visit:
    """A fresh row's newest click and the distinct items clicked with it in the window.

    ``(ts, item_id)`` orders a user's clicks; the writer counts a visit only if
    it is newer than the last one counted for the user.
    """

    ts: int
    item_id: int
    earlier: tuple[int, ...]  # most recent first, without item_id itself

    def pairs(self) -> list[tuple[int, int]]:
        """``(set's item, member)`` increments: both directions of each co-visit."""
        out: list[tuple[int, int]] = []
        for other in self.earlier:
            out += ((self.item_id, other), (other, self.item_id))
        return out


def newest_visit(events: Sequence[str], window_ms: int = WINDOW_MS) -> Visit | None:
    """The visit of a fresh row's packed events (any order); None without events (pure).

    The newest click is the latest time, the largest item id among equal times
    (a total order the writer's guard can compare). Its partners are the other
    clicks less than ``window_ms`` older, as the fresh view's horizon counts.
    This runs once per input event, so the window's strings are split all at
    once (as the writer's rows do) and the rest not at all; a malformed one
    raises ValueError.
    """
    if not events:
        return None
    ordered = sorted(events)  # 13-digit time first: string order is time order
    last = ordered[-1]
    if last[TS_DIGITS : TS_DIGITS + 1] != ":":
        raise ValueError(f"event time of {last!r} is not {TS_DIGITS} digits")
    newest_ts = int(last[:TS_DIGITS])
    window = ordered[bisect_left(ordered, f"{newest_ts - window_ms:0{TS_DIGITS}d};") :]
    tokens = ":".join(window).split(":")
    if len(tokens) != 4 * len(window):
        raise ValueError(f"events {window!r} are not all <ts>:<item>:<category>:<behavior>")
    stamps, items = tokens[0::4], list(map(int, tokens[1::4]))
    first_newest = len(window) - 1  # clicks at the newest time sort last
    while first_newest and stamps[first_newest - 1] == stamps[-1]:
        first_newest -= 1
    item_id = max(items[first_newest:])
    earlier = dict.fromkeys(reversed(items))  # most recent first, each once
    del earlier[item_id]
    return Visit(newest_ts, item_id, tuple(earlier))


def queue_neighbour_reads(
    pipe: Any, item_ids: Sequence[int], per_item: int, project: str = PROJECT
) -> None:
    """Queue the best ``per_item`` neighbours of each item; decode with decode_neighbours."""
    for item_id in item_ids:
        pipe.zrevrange(neighbours_key(item_id, project), 0, per_item - 1, withscores=True)


def decode_neighbours(reply: Sequence[tuple[bytes, float]]) -> Neighbours:
    """``(item_id, count)`` best first; members that are not item ids are ignored."""
    return [(int(member), float(score)) for member, score in reply if member.isdigit()]
