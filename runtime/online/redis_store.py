"""Batch writes and reads of Feast online rows straight on Redis, one pipeline each.

The writer does in one round trip what Feast's ``online_write_batch`` does in two
(HMGET every ``_ts:<view>``, then HSET the newer rows): a Lua script, called once
per view and chunk of rows, compares each stored timestamp with the row's and
writes only rows that are strictly newer. Running the comparison inside Redis
also closes the race Feast leaves open between its read and its write when two
writers share a key. Multi-key calls need a single Redis (not Redis Cluster),
which is what feature_store.yaml configures.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from runtime.online.cluster_calls import DEFAULT_WAIT_TIMEOUT_MS, ClusterCalls
from runtime.online.connect import OnlineClient
from runtime.online.node_pipeline import pipeline_for
from runtime.online.script_call import ScriptCall, ScriptShas
from schemas.online.covisit import Neighbours, decode_neighbours, queue_neighbour_reads
from schemas.online.feast_format import (
    FeatureRow,
    decode_row,
    decode_timestamp_ns,
    encode_row,
    encode_timestamp,
    layout,
)
from schemas.views import PROJECT, ViewSpec, view_spec

logger = logging.getLogger(__name__)
_pack_int64 = struct.Struct("<q").pack

# One call upserts many rows of one view. KEYS: the entity hashes. ARGV[1]: TTL
# (0 = none), ARGV[2]: features per row (n); then per row: ts field, ts bytes,
# seconds, nanos, n field/value pairs. The stored Timestamp protobuf is parsed
# here: field 1 (tag 0x08) seconds, field 2 (tag 0x10) nanos, both varints.
# Seconds >= 2^63 are negative int64s, which Feast's max(stored, 0) treats as
# "no row"; so is a zero timestamp. A stored value that is no such protobuf (cut
# short, another wire type, foreign bytes) is no row either, as the worker reads
# it: the new row replaces it, where a script error would fail the batch forever.
# Returns how many rows were written.
UPSERT_IF_NEWER = """
local function varint(s, i)
  local value, scale = 0, 1
  while true do
    local b = string.byte(s, i)
    if not b or scale > 2^63 then return nil, i end
    i = i + 1
    value = value + (b % 128) * scale
    if b < 128 then return value, i end
    scale = scale * 128
  end
end
local function is_newer(stored, sec, nanos)
  if not stored then return true end
  local old_sec, old_nanos, i = 0, 0, 1
  while i <= #stored do
    local tag = string.byte(stored, i)
    if tag % 8 ~= 0 then return true end
    local v
    v, i = varint(stored, i + 1)
    if not v then return true end
    if tag == 8 then old_sec = v elseif tag == 16 then old_nanos = v end
  end
  if old_sec >= 9223372036854775808 or (old_sec == 0 and old_nanos == 0) then return true end
  return sec > old_sec or (sec == old_sec and nanos > old_nanos)
end
local ttl, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local written, a = 0, 3
for k = 1, #KEYS do
  local key, ts_field = KEYS[k], ARGV[a]
  if is_newer(redis.call('HGET', key, ts_field), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])) then
    local fields = {ts_field, ARGV[a + 1]}
    for j = a + 4, a + 3 + 2 * n do fields[#fields + 1] = ARGV[j] end
    redis.call('HSET', key, unpack(fields))
    if ttl > 0 then redis.call('EXPIRE', key, ttl) end
    written = written + 1
  end
  a = a + 4 + 2 * n
end
return written
"""
# Rows per script call: one call runs atomically and blocks every other client of Redis
# meanwhile (the worker's reads among them). At 250 rows a call took 12-16 ms, up to 125,
# on the demo's shared cores (SLOWLOG), and the worker's p99 waited behind it; 50 rows
# keep a call to a few milliseconds even there.
ROWS_PER_CALL = 50


__all__ = ["GuardedCalls", "OnlineStoreWriter", "ScriptCall", "WriteResult", "read_rows"]


@dataclass(frozen=True)
class WriteResult:
    written: int
    skipped_stale: int
    also: tuple[Any, ...] = ()  # the replies of the ``also`` script calls, in order


@dataclass(frozen=True)
class Plan:
    """What :class:`GuardedCalls` decided: calls beside the rows, calls after them."""

    with_rows: list[ScriptCall]
    after_rows: list[ScriptCall]
    counted: int  # what the plan counts as done, reported as ``WriteResult.also``


@dataclass(frozen=True)
class GuardedCalls:
    """Calls decided from the values of ``guard_keys``, read first (see ``write``).

    The stand-in, on a Redis Cluster, for one script that checks a guard and
    applies what it guards across slots: the guards are read, ``plan`` decides,
    the decided calls go with the rows, and the guards' updates only after every
    one of those was acknowledged. A failure between the two sends the batch
    again: what it guards is then applied at least once instead of exactly once.
    """

    guard_keys: list[bytes]
    plan: Callable[[list[bytes | None]], Plan]


class OnlineStoreWriter:
    """Upserts :class:`FeatureRow` batches in Feast's format, never replacing newer rows."""

    def __init__(
        self,
        client: OnlineClient,
        project: str = PROJECT,
        key_ttl_seconds: int | None = None,
        *,
        replica_acks: int = 1,
        wait_timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS,
    ) -> None:
        """``replica_acks`` and ``wait_timeout_ms`` apply on a cluster only: how many
        replicas of each master must confirm a batch, and how long to wait for them."""
        self._client = client
        self._project = project
        self._ttl = key_ttl_seconds or 0
        self._shas = ScriptShas()
        self._cluster = (
            ClusterCalls(client, replica_acks, wait_timeout_ms)
            if isinstance(client, RedisCluster)
            else None
        )

    @property
    def is_cluster(self) -> bool:
        return self._cluster is not None

    def write(
        self, rows: Sequence[FeatureRow], also: Sequence[ScriptCall] | GuardedCalls = ()
    ) -> WriteResult:
        """Write ``rows`` in one pipeline; raises ``redis.RedisError`` if Redis fails.

        Each row is written only if its event time is strictly newer than the
        stored ``_ts:<view>``, like Feast; rows are applied in order, so repeated
        keys in one batch end as Feast would leave them (coalescing first is cheaper).

        ``also`` rides in the same pipeline, after the rows, so whatever Redis
        acknowledged for the rows it acknowledged for them too. They must be
        idempotent, like the rows: a failed batch is sent again whole, and so is
        a pipeline that met a Redis which had lost its scripts.

        ``also`` may instead be :class:`GuardedCalls`: its guards are read first, and
        its ``after_rows`` calls are sent once the rest was acknowledged; the result's
        ``also`` is then ``(plan.counted,)``.
        """
        if not rows and not also:
            return WriteResult(0, 0)
        # Two shared arguments (TTL, features per row), then a segment per row: a
        # cluster may send one node's calls as one (runtime/online/node_batches.py).
        calls = [
            ScriptCall(UPSERT_IF_NEWER, keys, argv, header=2)
            for keys, argv in self.script_calls(rows)
        ]
        row_calls = len(calls)
        after: list[ScriptCall] = []
        if isinstance(also, GuardedCalls):
            plan = also.plan(self._get(also.guard_keys))
            calls += plan.with_rows
            after = plan.after_rows
        else:
            calls += also
        replies = self._run(calls)
        if after:
            self._run(after)
        written = sum(int(reply) for reply in replies[:row_calls])
        extra = (plan.counted,) if isinstance(also, GuardedCalls) else tuple(replies[row_calls:])
        return WriteResult(written, len(rows) - written, extra)

    def _run(self, calls: Sequence[ScriptCall]) -> list[Any]:
        if not calls:
            return []
        if self._cluster is not None:
            return self._cluster.run(calls)
        try:
            return self._execute(calls)
        except redis.exceptions.NoScriptError:
            # Redis restarted (or SCRIPT FLUSH) since the scripts were loaded.
            self._shas.clear()
            return self._execute(calls)

    def _get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if self._cluster is not None:
            return self._cluster.get(keys)
        values: list[bytes | None] = self._client.mget(keys) if keys else []  # type: ignore[assignment]
        return values

    def _execute(self, calls: Sequence[ScriptCall]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for call in calls:
            sha = self._script_sha(call.script)
            pipe.execute_command("EVALSHA", sha, len(call.keys), *call.keys, *call.argv)
        replies: list[Any] = pipe.execute()
        return replies

    def _script_sha(self, script: str) -> str:
        return self._shas.sha(self._client, script)

    def script_calls(self, rows: Sequence[FeatureRow]) -> list[tuple[list[bytes], list[Any]]]:
        """``(KEYS, ARGV)`` of the script calls for ``rows``: per view (and slot, on a
        cluster), in chunks (pure)."""
        project = self._project.encode()
        prefixes: dict[str, bytes] = {}  # a ViewSpec hashes slowly: look its layout up once
        by_group: dict[tuple[str, int], list[tuple[FeatureRow, bytes]]] = {}
        for row in rows:
            name = row.view.name
            prefix = prefixes.get(name)
            if prefix is None:
                prefix = prefixes[name] = layout(row.view).key_prefix
            key = prefix + _pack_int64(row.entity_id) + project
            slot = key_slot(key) if self._cluster is not None else 0
            by_group.setdefault((name, slot), []).append((row, key))
        calls = []
        for view_rows in by_group.values():
            for i in range(0, len(view_rows), ROWS_PER_CALL):
                calls.append(self._call(view_rows[i : i + ROWS_PER_CALL]))
        return calls

    def _call(self, rows: Sequence[tuple[FeatureRow, bytes]]) -> tuple[list[bytes], list[Any]]:
        spec = rows[0][0].view
        keys: list[bytes] = []
        argv: list[Any] = [self._ttl, len(spec.features)]
        rows_at = layout(spec)
        ts_field = rows_at.ts_field
        hashes = [rows_at.field_hashes[name] for name in spec.feature_names]
        for row, key in rows:
            keys.append(key)
            seconds, nanos = divmod(row.event_ns, 1_000_000_000)
            argv += (ts_field, encode_timestamp(row.event_ns), seconds, nanos)
            if row.encoded is not None:
                argv += chain.from_iterable(zip(hashes, row.encoded, strict=True))
            else:
                argv += encode_row(spec, row.values or {})
        return keys, argv


def read_rows(
    client: OnlineClient,
    view: str | ViewSpec,
    entity_ids: Sequence[int],
    features: Sequence[str] | None = None,
    *,
    project: str = PROJECT,
    timestamp_field: str | None = None,
) -> list[dict[str, Any] | None]:
    """Feature values of ``entity_ids`` in one pipeline; None where the view has no row.

    Reads exactly what ``FeatureStore.get_online_features`` would return for
    these features. With ``timestamp_field``, each dict also carries the row's
    event time in epoch milliseconds under that name.
    """
    spec = view_spec(view)
    names = list(spec.feature_names if features is None else features)
    pipe = pipeline_for(client)
    queue_row_reads(pipe, spec, entity_ids, names, project)
    replies: list[list[bytes | None]] = pipe.execute()
    return [decode_reply(spec, names, reply, timestamp_field) for reply in replies]


def queue_row_reads(
    pipe: Any, spec: ViewSpec, entity_ids: Sequence[int], names: Sequence[str], project: str
) -> None:
    """Queue one HMGET per entity of ``names`` and the row timestamp; decode with decode_reply."""
    rows_at = layout(spec)
    fields = [rows_at.field_hashes[name] for name in names]
    fields.append(rows_at.ts_field)
    for entity_id in entity_ids:
        # redis-py's stubs say str, but keys are bytes here (and redis-py takes bytes).
        pipe.hmget(rows_at.redis_key(entity_id, project), fields)


def decode_reply(
    spec: ViewSpec,
    names: Sequence[str],
    reply: list[bytes | None],
    timestamp_field: str | None = None,
) -> dict[str, Any] | None:
    """One HMGET reply of queue_row_reads as Feast returns it; None where there is no row."""
    ts_ns = decode_timestamp_ns(reply[-1])
    if ts_ns is None:
        return None
    row = decode_row(spec, list(names), reply[:-1])
    if timestamp_field is not None:
        row[timestamp_field] = ts_ns // 1_000_000
    return row


def read_neighbours(
    client: OnlineClient, item_ids: Sequence[int], per_item: int, project: str = PROJECT
) -> list[Neighbours]:
    """Each item's best ``per_item`` co-visited items, in one pipeline (empty where none)."""
    if not item_ids or per_item < 1:
        return [[] for _ in item_ids]
    pipe = pipeline_for(client)
    queue_neighbour_reads(pipe, item_ids, per_item, project)
    replies: list[Sequence[tuple[bytes, float]]] = pipe.execute()
    return [decode_neighbours(reply) for reply in replies]
