"""Co-visitation counts from the fresh user rows, in the batch's own Redis pipeline.

Every fresh row (``user_recent``, one per event) stands for its newest click
(:func:`schemas.online.covisit.newest_visit`); that click pairs with the user's
other clicks of the window, and each pair adds 1 to both items' sorted sets.
The same call touches the click's item in the user's history
(:mod:`schemas.online.history`): one visit, one touch, under the same guard.
The calls ride in the pipeline of the batch's feature rows
(:meth:`~runtime.online.redis_store.OnlineStoreWriter.write`), so offsets are
committed only after Redis took the counts as well (at-least-once).

Counting is idempotent, so a replay does not count a pair twice: a replayed
batch (Redis failed, a rebalance, a crash before the commit) and the feature
job's own at-least-once rows after a restore all come again. Per user, Redis
keeps the newest click already counted (``seen_key``, for ``2 * window``); a
visit is counted only if it is newer, checked and applied in one Lua call.
The cost of the guard: a click that arrives after a newer one of the same
user (out of order) is never counted, because its row's newest click is the
newer one, already counted. That loses a few pairs instead of counting some twice.

Memory stays bounded: each touched set is cut to its ``neighbours`` best
members and its TTL renewed, so a set nobody co-visits for ``ttl_s`` goes away.
A member cut from a full set starts again from 1 when it comes back.

On a Redis Cluster the guard and the sets it guards live in different slots, and
no script spans slots; :func:`guarded_calls` splits the work instead. The guards
of the batch's users are read first, the visits newer than them are counted with
one call per touched set (in the rows' round), and the guards move only after
every count was acknowledged. A batch that fails between the two is sent again
and counts its visits again: on a cluster, counting is at-least-once (never lost,
rarely doubled), where one Redis has it exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from runtime.online.redis_store import GuardedCalls, Plan, ScriptCall
from schemas.features import FeatureUpdate, UserRecentEvents
from schemas.online.covisit import Visit, neighbours_key, newest_visit, seen_key
from schemas.online.history import HISTORY_ITEMS, HISTORY_TTL_S, TOUCH_HISTORY, history_keys
from schemas.views import PROJECT
from schemas.windows import WINDOW_MS

M = TypeVar("M")
NEIGHBOURS = 100
TTL_S = 2 * 24 * 3600  # as long as the trends views keep their rows
# Visits per script call: one call runs atomically and blocks Redis meanwhile (kept as
# short as the row writes', schemas/online/redis_store.ROWS_PER_CALL).
VISITS_PER_CALL = 50

# ARGV: neighbours kept, set TTL (s), guard TTL (ms), history items kept, history TTL
# (s); then per visit: ts, item, n, the n earlier items. KEYS per visit: the user's
# guard, the user's two history sets (schemas.online.history), the item's set, the n
# earlier items' sets. A visit newer than the guard counts its pairs and touches the
# item in the user's history (see TOUCH_HISTORY for the history's rules). Returns how
# many visits were counted.
COUNT_VISITS = """
local keep, ttl, seen_ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local history_keep, history_ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local touched, histories, counted, k, a = {}, {}, 0, 1, 6
while a <= #ARGV do
  local ts, item, n = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2])
  local seen = redis.call('GET', KEYS[k])
  local newer = true
  if seen then
    local seen_ts, seen_item = string.match(seen, '^(%d+):(%d+)$')
    if seen_ts then
      seen_ts, seen_item = tonumber(seen_ts), tonumber(seen_item)
      newer = ts > seen_ts or (ts == seen_ts and tonumber(item) > seen_item)
    end
  end
  if newer then
    for j = 1, n do
      redis.call('ZINCRBY', KEYS[k + 3], 1, ARGV[a + 2 + j])
      redis.call('ZINCRBY', KEYS[k + 3 + j], 1, item)
      touched[KEYS[k + 3 + j]] = true
    end
    if n > 0 then touched[KEYS[k + 3]] = true end
    redis.call('ZADD', KEYS[k + 1], 'GT', ARGV[a], item)
    redis.call('ZINCRBY', KEYS[k + 2], 1, item)
    histories[KEYS[k + 1]] = KEYS[k + 2]
    redis.call('SET', KEYS[k], ARGV[a] .. ':' .. item, 'PX', seen_ttl)
    counted = counted + 1
  end
  k, a = k + 4 + n, a + 3 + n
end
for key in pairs(touched) do
  redis.call('ZREMRANGEBYRANK', key, 0, -(keep + 1))
  redis.call('EXPIRE', key, ttl)
end
for times, counts in pairs(histories) do
  local over = redis.call('ZRANGE', times, 0, -(history_keep + 1))
  if #over > 0 then
    redis.call('ZREM', times, unpack(over))
    redis.call('ZREM', counts, unpack(over))
  end
  redis.call('EXPIRE', times, history_ttl)
  redis.call('EXPIRE', counts, history_ttl)
end
return counted
"""


@dataclass(frozen=True)
class CovisitOptions:
    """Where the counts go and how they are bounded."""

    project: str = PROJECT
    window_ms: int = WINDOW_MS
    neighbours: int = NEIGHBOURS
    ttl_s: int = TTL_S
    history_items: int = HISTORY_ITEMS
    history_ttl_s: int = HISTORY_TTL_S

    @property
    def seen_ttl_ms(self) -> int:
        # Long enough for any replay of a click still inside a user's window.
        return 2 * self.window_ms


def batch_visits(
    batch: Iterable[tuple[M, FeatureUpdate]], window_ms: int
) -> list[tuple[int, Visit]]:
    """``(user, visit)`` of every fresh row, in changelog order (pure).

    All rows count, not only the newest per user: each is one click. A row whose
    events do not parse is left out here; the row conversion dead-letters it.
    """
    out: list[tuple[int, Visit]] = []
    for _, update in batch:
        if not isinstance(update, UserRecentEvents):
            continue
        try:
            visit = newest_visit(update.events, window_ms)
        except ValueError:
            continue
        if visit is not None:
            out.append((update.user_id, visit))
    return out


def count_calls(
    visits: Sequence[tuple[int, Visit]], options: CovisitOptions, *, cluster: bool
) -> list[ScriptCall] | GuardedCalls:
    """The calls that count ``visits``: atomic scripts on one Redis, guarded calls on a
    cluster (see the module's docstring); nothing for no visits."""
    if not visits:
        return []
    return guarded_calls(visits, options) if cluster else script_calls(visits, options)


def script_calls(visits: Sequence[tuple[int, Visit]], options: CovisitOptions) -> list[ScriptCall]:
    """The :data:`COUNT_VISITS` calls for ``visits``, in order, in chunks (pure)."""
    calls = []
    for start in range(0, len(visits), VISITS_PER_CALL):
        keys: list[bytes] = []
        argv: list[Any] = [options.neighbours, options.ttl_s, options.seen_ttl_ms]
        argv += [options.history_items, options.history_ttl_s]
        project = options.project
        for user_id, visit in visits[start : start + VISITS_PER_CALL]:
            keys += (seen_key(user_id, project), *history_keys(user_id, project))
            keys.append(neighbours_key(visit.item_id, project))
            keys += (neighbours_key(other, project) for other in visit.earlier)
            argv += (visit.ts, visit.item_id, len(visit.earlier), *visit.earlier)
        calls.append(ScriptCall(COUNT_VISITS, keys, argv))
    return calls


# The cluster's halves of COUNT_VISITS (see the module's docstring), each over many keys
# of one node (runtime/online/node_batches.py). KEYS: item sets; ARGV: neighbours kept,
# set TTL (s), then per set: how many members to add 1 to, and those members (repeats
# allowed). Returns how many sets it touched.
COUNT_PAIRS = """
local keep, ttl, a = tonumber(ARGV[1]), tonumber(ARGV[2]), 3
for k = 1, #KEYS do
  local count = tonumber(ARGV[a])
  for i = a + 1, a + count do redis.call('ZINCRBY', KEYS[k], 1, ARGV[i]) end
  redis.call('ZREMRANGEBYRANK', KEYS[k], 0, -(keep + 1))
  redis.call('EXPIRE', KEYS[k], ttl)
  a = a + 1 + count
end
return #KEYS
"""
# KEYS: users' guards; ARGV: TTL (ms), then per guard: ts, item. Moves each guard forward
# only, so a late or repeated call never moves one back. Returns how many moved.
ADVANCE_SEEN = """
local ttl, moved = tonumber(ARGV[1]), 0
for k = 1, #KEYS do
  local ts, item = tonumber(ARGV[2 * k]), tonumber(ARGV[2 * k + 1])
  local newer = true
  local seen = redis.call('GET', KEYS[k])
  if seen then
    local seen_ts, seen_item = string.match(seen, '^(%d+):(%d+)$')
    if seen_ts then
      seen_ts, seen_item = tonumber(seen_ts), tonumber(seen_item)
      newer = ts > seen_ts or (ts == seen_ts and item > seen_item)
    end
  end
  if newer then
    redis.call('SET', KEYS[k], ARGV[2 * k] .. ':' .. ARGV[2 * k + 1], 'PX', ttl)
    moved = moved + 1
  end
end
return moved
"""


def parse_seen(value: bytes | None) -> tuple[int, int] | None:
    """A guard's ``(ts, item)``; None for none or for a value that is not one (pure).

    As the scripts read it: a foreign value guards nothing.
    """
    if value is None:
        return None
    ts, _, item = value.partition(b":")
    if not ts.isdigit() or not item.isdigit():
        return None
    return int(ts), int(item)


def plan_counts(
    visits: Sequence[tuple[int, Visit]],
    guards: Mapping[int, tuple[int, int] | None],
    options: CovisitOptions,
) -> Plan:
    """The cluster's count and guard calls for ``visits``, given each user's guard (pure).

    Visits are taken in order, each counted if newer than its user's guard as it
    stands after the visits before it: the same decisions COUNT_VISITS makes.
    """
    project = options.project
    current = dict(guards)
    members: dict[int, list[int]] = {}  # item whose set grows -> members to add
    touches: dict[int, list[int]] = {}  # user -> ts, item, ts, item, ... of counted visits
    counted = 0
    for user_id, visit in visits:
        seen = current.get(user_id)
        if seen is not None and (visit.ts, visit.item_id) <= seen:
            continue
        current[user_id] = (visit.ts, visit.item_id)
        counted += 1
        touches.setdefault(user_id, []).extend((visit.ts, visit.item_id))
        for item, member in visit.pairs():
            members.setdefault(item, []).append(member)
    counts = [
        ScriptCall(COUNT_PAIRS, [neighbours_key(item, project)],
                   [options.neighbours, options.ttl_s, len(added), *added], header=2)
        for item, added in members.items()
    ]  # fmt: skip
    counts += [
        ScriptCall(TOUCH_HISTORY, list(history_keys(user_id, project)),
                   [options.history_items, options.history_ttl_s, len(pairs) // 2, *pairs],
                   header=2)
        for user_id, pairs in touches.items()
    ]  # fmt: skip
    advanced = []
    for user_id in dict.fromkeys(user for user, _ in visits):
        newest = current.get(user_id)
        if newest is not None and newest != guards.get(user_id):
            key = seen_key(user_id, project)
            argv = [options.seen_ttl_ms, *newest]
            advanced.append(ScriptCall(ADVANCE_SEEN, [key], argv, header=1))
    return Plan(counts, advanced, counted)


def guarded_calls(visits: Sequence[tuple[int, Visit]], options: CovisitOptions) -> GuardedCalls:
    """:func:`plan_counts` for the writer to run after reading the users' guards."""
    users = list(dict.fromkeys(user for user, _ in visits))

    def plan(values: list[bytes | None]) -> Plan:
        guards = {user: parse_seen(value) for user, value in zip(users, values, strict=True)}
        return plan_counts(visits, guards, options)

    return GuardedCalls([seen_key(user, options.project) for user in users], plan)
