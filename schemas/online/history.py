"""A user's longer history in the online store, as shared ground: keys, the update script, reads.

The fresh view holds a user's last 30 minutes; people come back to items over
hours and days (on the Taobao 9-day file's last day, 46% of requests were followed
by an item touched in the 24 hours before, 36% by one of the last 30 minutes). The
feature writer keeps, per user, the ``HISTORY_ITEMS`` items touched last, each with
the time of its last touch and how often it was touched, and the worker reads them
for its ``recent`` route and the ranker's features (``schemas.candidates``).

Two sorted sets per user, members the items' decimal ids: ``…:ts`` scored by the
last touch (event time, ms) and ``…:n`` by the number of touches. Both carry the
user's id as a hash tag, so one call updates them on a Redis Cluster too. The
writer updates them in the same guarded call that counts co-visits
(``jobs.feature_writer.covisit``): one visit, one touch, exactly once on one Redis
(at least once on a cluster, as the co-visits). Like the co-visitation sets they
sit beside Feast's hashes, namespaced by the Feast project (Feast has no sorted-set
feature type); a set nobody touches for ``KEY_TTL_SECONDS`` goes away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.candidates import HistoryTouch
from schemas.views import KEY_TTL_SECONDS, PROJECT

HISTORY_ITEMS = 50
HISTORY_TTL_S = KEY_TTL_SECONDS

# The touches of several users, one pair of KEYS each (the ``ts`` set, then the ``n``
# set). ARGV: items kept, TTL (s); then per pair: m, and m (ts, item) touches. A touch
# raises the item's time to ts (never lowers it: ZADD GT) and adds one to its count;
# then the oldest beyond the items kept leave both sets. Returns the pairs updated.
# Per-pair segments let a Redis Cluster merge the calls of one node
# (runtime.online.node_batches): the ``n`` key's segment is empty.
TOUCH_HISTORY = """
local keep, ttl, a = tonumber(ARGV[1]), tonumber(ARGV[2]), 3
for k = 1, #KEYS, 2 do
  local m = tonumber(ARGV[a])
  for j = 1, m do
    redis.call('ZADD', KEYS[k], 'GT', ARGV[a + 2 * j - 1], ARGV[a + 2 * j])
    redis.call('ZINCRBY', KEYS[k + 1], 1, ARGV[a + 2 * j])
  end
  local over = redis.call('ZRANGE', KEYS[k], 0, -(keep + 1))
  if #over > 0 then
    redis.call('ZREM', KEYS[k], unpack(over))
    redis.call('ZREM', KEYS[k + 1], unpack(over))
  end
  redis.call('EXPIRE', KEYS[k], ttl)
  redis.call('EXPIRE', KEYS[k + 1], ttl)
  a = a + 1 + 2 * m
end
return #KEYS / 2
"""


def history_keys(user_id: int, project: str = PROJECT) -> tuple[bytes, bytes]:
    """The user's ``ts`` and ``n`` sets (one hash slot: the user's id is the tag)."""
    stem = f"{project}:history:{{{user_id}}}"
    return f"{stem}:ts".encode(), f"{stem}:n".encode()


# The contract's type: the ranker's features read the history (schemas.candidates).
Touched = HistoryTouch
History = list[Touched]  # most recent first


def queue_history_reads(pipe: Any, user_ids: Sequence[int], project: str = PROJECT) -> None:
    """Queue both sets of every user (two replies each); decode with :func:`decode_history`."""
    for user_id in user_ids:
        ts_key, count_key = history_keys(user_id, project)
        pipe.zrevrange(ts_key, 0, HISTORY_ITEMS - 1, withscores=True)
        # Whole set, any order (decoded as a map); ZREVRANGE is what every pipeline
        # the worker reads through has, a cluster's node pipeline included.
        pipe.zrevrange(count_key, 0, -1, withscores=True)


def decode_history(
    times: Sequence[tuple[bytes, float]], counts: Sequence[tuple[bytes, float]]
) -> History:
    """A user's history, most recent first (ties as Redis orders them: the member's bytes
    descending); members that are not item ids are ignored; a count missing (a touch
    half-applied) reads as one."""
    count_of = {member: int(score) for member, score in counts}
    return [
        Touched(int(member), int(score), max(count_of.get(member, 1), 1))
        for member, score in times
        if member.isdigit()
    ]


def history_order(history: dict[int, tuple[int, int]]) -> History:
    """``item -> (last_ts, count)`` as the store returns it (pure): most recent first, ties
    by the item's decimal id descending as bytes, at most :data:`HISTORY_ITEMS`."""
    ordered = sorted(history.items(), key=lambda kv: (kv[1][0], str(kv[0]).encode()), reverse=True)
    return [Touched(item, ts, count) for item, (ts, count) in ordered[:HISTORY_ITEMS]]


def fold_fresh_touches(history: History, items: Sequence[int], event_ts: Sequence[int]) -> History:
    """``history`` with the fresh view's touches it does not hold yet (pure).

    The writer updates the history in the pipeline that writes the fresh view, so
    when the store is behind and the worker folds the trigger into the fresh view
    (``inference.worker.freshness``), the history lacks it, and any touch whose
    write has not landed. Training replays the store with every touch applied, so
    the ranker's history features (``schemas.candidates``) read it complete; this
    fold gives the worker the same. Because a touch
    only ever raises an item's time (``ZADD GT``), a fresh event newer than its
    item's time in the history is one the history has not counted: it raises the
    time and adds one to the count. A history that holds them all is returned as
    it is, so a caught-up store and the replay read the same.
    """
    merged = {touch.item_id: (touch.last_ts, touch.count) for touch in history}
    folded = False
    for item, ts in zip(items, event_ts, strict=False):
        held = merged.get(item)
        if held is None or ts > held[0]:
            merged[item] = (ts, (held[1] if held else 0) + 1)
            folded = True
    return history_order(merged) if folded else list(history)
