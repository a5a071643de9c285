"""Many one-slot script calls as a few calls per cluster node (pure).

The writer's rows land in thousands of slots, a few rows each: one ``EVALSHA`` per
slot cost a Redis Cluster 2.7 times the CPU per row of one Redis and gave 0.4 of its
rows/s (``make bench-redis-cluster``). Redis 7 lets a script touch keys of several
slots as long as one node serves them all (the ``allow-cross-slot-keys`` flag), so
calls of one script bound for one node become one call again, of up to
``MAX_KEYS`` keys, as on one Redis.

Such a call declares no keys (a command's declared keys must share a slot): they
travel at the front of ARGV, and :data:`CROSS_SLOT_PRELUDE` puts them back into
``KEYS`` and the rest into ``ARGV``, so a script runs unchanged. Redis still checks
every key a script touches: one that this node does not serve (a stale slot map, a
slot being migrated) fails the call with "non local key", and the caller sends its
parts again one slot at a time, redirections and all. Scripts are idempotent and a
failed call may have applied some of its rows: sending them again is safe.

A call can be merged when it says how (``ScriptCall.header``): its first ``header``
arguments are shared by all its keys, and the rest are per-key segments in key
order. Merged calls share script and header; the merged reply is the sum of what
the parts would have returned, so only scripts whose replies are counts merge.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.online.script_call import ScriptCall

# Keys per merged call: one call runs atomically and holds the node meanwhile, so it
# stays as short as one Redis's calls (redis_store.ROWS_PER_CALL).
MAX_KEYS = 50
CROSS_SLOT_PRELUDE = """#!lua flags=allow-cross-slot-keys
local n = tonumber(ARGV[1])
local KEYS, ARGV = {unpack(ARGV, 2, n + 1)}, {unpack(ARGV, n + 2)}
"""


@dataclass(frozen=True)
class Merged:
    """One call to send to ``node`` in place of the calls at ``parts`` (their indexes)."""

    node: str
    call: ScriptCall
    parts: tuple[int, ...]


def merged_script(script: str) -> str:
    return CROSS_SLOT_PRELUDE + script


def merge(
    calls: Sequence[ScriptCall], node_of: Callable[[int], str], max_keys: int = MAX_KEYS
) -> tuple[list[Merged], list[int]]:
    """Calls grouped per node, script and header, in their order; and the indexes of
    calls that do not merge (no ``header``).

    ``node_of(i)`` names the node serving call ``i``'s slot.
    """
    groups: dict[tuple[str, str, Hashable], list[int]] = {}
    alone: list[int] = []
    for index, call in enumerate(calls):
        if call.header is None:
            alone.append(index)
            continue
        shared = tuple(call.argv[: call.header])
        groups.setdefault((node_of(index), call.script, shared), []).append(index)
    merged: list[Merged] = []
    for (node, script, _), indexes in groups.items():
        chunk: list[int] = []
        keys = 0
        for index in indexes:
            size = len(calls[index].keys)
            if chunk and keys + size > max_keys:
                merged.append(_merged(node, script, calls, chunk))
                chunk, keys = [], 0
            chunk.append(index)
            keys += size
        merged.append(_merged(node, script, calls, chunk))
    return merged, alone


def _merged(node: str, script: str, calls: Sequence[ScriptCall], chunk: list[int]) -> Merged:
    return Merged(node, _merged_call(script, [calls[i] for i in chunk]), tuple(chunk))


def _merged_call(script: str, parts: Sequence[ScriptCall]) -> ScriptCall:
    header = parts[0].header or 0
    keys = [key for part in parts for key in part.keys]
    argv: list[Any] = [len(keys), *keys, *parts[0].argv[:header]]
    for part in parts:
        argv += part.argv[header:]
    return ScriptCall(merged_script(script), [], argv)
