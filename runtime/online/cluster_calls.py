"""Lua calls on a Redis Cluster: one slot per call, one pipeline per master, then WAIT.

A script may only touch keys of one slot, so the writer gives each call the keys of
one slot (:func:`slot_of_call` checks). :class:`ClusterCalls` sends the calls of
each master in one pipeline on one connection and ends it with ``WAIT``, so a
batch counts as written only once ``replica_acks`` replicas of every master it
wrote to hold it. That is what makes a failover lose nothing: Redis replicates
asynchronously, and a master killed right after replying would otherwise take
acknowledged writes with it, and the writer would already have committed their
Kafka offsets. With ``replica_acks=0`` no WAIT is sent (and a kill can lose the
last writes before it).

A shard that is down to one copy (its replica died, or was just promoted and its
old master is gone) has no replica to wait for: the master (``ROLE``) has none
connected, and the writes there wait for as many replicas as it has, none at all
until a replica returns, with a warning, rather than stopping the whole writer
while the shard heals. Until then a loss of that last copy loses what it held
alone, as for any store with one copy. A replica the cluster still lists but that
does not confirm within ``wait_timeout_ms`` fails the batch (:class:`ReplicationError`).

Replies that are answers about the topology are handled here, call by call:

- ``MOVED`` (the slot lives elsewhere now: a failover, a resharding): the slot map
  is read again and the call sent to the new owner;
- ``ASK`` (the slot is being migrated and this key already left): the call goes to
  the target once, preceded by ``ASKING``;
- ``TRYAGAIN`` and ``CLUSTERDOWN`` (a migration or failover in progress): sent
  again after a short pause;
- ``NOSCRIPT`` (a promoted replica has no script cache): loaded there, sent again.

After ``MAX_ROUNDS`` rounds, or on a node that does not answer, the batch fails with
``redis.RedisError`` and the caller sends it again whole: every call is idempotent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    RedisClusterException,
    TryAgainError,
)

from runtime.online.node_batches import Merged, merge
from runtime.online.node_pipeline import NodePipeline, refresh_slot_map
from runtime.online.script_call import ScriptCall, ScriptShas

__all__ = ["ClusterCalls", "CrossSlotCall", "ReplicationError", "ScriptCall", "slot_of_call"]

logger = logging.getLogger(__name__)
MAX_ROUNDS = 8
RETRY_PAUSE_S = 0.05
# How long a master's count of connected replicas is trusted before ROLE asks again.
ROLE_TTL_S = 1.0
DEFAULT_WAIT_TIMEOUT_MS = 2000


class ReplicationError(redis.RedisError):
    """A master took the writes but too few replicas confirmed them in time."""


class CrossSlotCall(ValueError):
    """A call whose keys span slots: a bug in the caller, never sent."""


def slot_of_call(keys: Sequence[bytes]) -> int:
    """The one slot of ``keys``; CrossSlotCall if they span several (pure)."""
    if not keys:
        raise CrossSlotCall("a cluster call needs at least one key to route by")
    slots = {key_slot(key) for key in keys}
    if len(slots) > 1:
        raise CrossSlotCall(f"keys of one call span {len(slots)} slots")
    return slots.pop()


@dataclass
class _Pending:
    index: int
    call: ScriptCall
    slot: int
    ask: tuple[str, int] | None = None  # the ASK target, for one try


class ClusterCalls:
    """Runs :class:`ScriptCall` lists on a cluster; replies come back in the calls' order."""

    def __init__(
        self,
        client: RedisCluster,
        replica_acks: int = 1,
        wait_timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS,
    ) -> None:
        # redis.cluster has no type hints: Any says so once, here, instead of per call.
        self._client: Any = client
        self.replica_acks = replica_acks
        self.wait_timeout_ms = wait_timeout_ms
        self._shas = ScriptShas()
        self._one_copy: set[str] = set()  # masters written without a replica to wait for
        self._roles: dict[str, tuple[float, int]] = {}  # master -> (checked at, replicas)

    def run(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Every call's reply; raises ``redis.RedisError`` if the batch did not fully land.

        Calls that merge (``ScriptCall.header``) go first, a few per node; a merged
        call's reply is reported on its first part and 0 on the others (they are
        counts, and their sum is what it means).
        """
        replies: list[Any] = [0] * len(calls)
        slots = [slot_of_call(call.keys) for call in calls]
        merged, alone = merge(calls, lambda index: self._primary(slots[index]).name)
        pending = [_Pending(i, calls[i], slots[i]) for i in alone]
        pending += [_Pending(i, calls[i], slots[i]) for i in self._run_merged(merged, replies)]
        for _ in range(MAX_ROUNDS):
            if not pending:
                return replies
            pending = self._round(pending, replies)
        raise redis.RedisError(
            f"{len(pending)} calls still redirected or refused after {MAX_ROUNDS} rounds "
            "(a slot migration or failover in progress); the batch will be sent again"
        )

    def get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """``GET`` of each key from its master (:class:`NodePipeline`)."""
        pipe = NodePipeline(self._client)
        for key in keys:
            pipe.get(key)
        values: list[bytes | None] = pipe.execute()
        return values

    def _run_merged(self, merged: Sequence[Merged], replies: list[Any]) -> list[int]:
        """Send the merged calls; the indexes of the parts of those that failed, to be
        sent again one slot at a time (a stale map, a migration, a failover)."""
        by_node: dict[str, list[Merged]] = {}
        for batch in merged:
            by_node.setdefault(batch.node, []).append(batch)
        failed: list[int] = []
        refresh = False
        for name, batches in by_node.items():
            node = self._client.get_node(node_name=name)
            items = [_Pending(-1, batch.call, -1) for batch in batches]
            for batch, result in zip(batches, self._send(node, items), strict=True):
                if isinstance(result, NoScriptError):
                    self._load(node, batch.call.script)  # for the next batch
                elif isinstance(result, redis.ResponseError):
                    refresh = True  # "non local key", the cluster down: see the map again
                if isinstance(result, Exception):
                    failed += batch.parts
                else:
                    replies[batch.parts[0]] = result
        if refresh:
            self._refresh()
        return sorted(failed)

    def _primary(self, slot: int) -> ClusterNode:
        try:
            node = self._client.nodes_manager.get_node_from_slot(slot)
        except RedisClusterException as exc:
            raise redis.RedisError(f"no node serves slot {slot}: {exc}") from exc
        if node is None:
            raise redis.RedisError(f"no node serves slot {slot}")
        found: ClusterNode = node
        return found

    def _refresh(self) -> None:
        refresh_slot_map(self._client)

    def _round(self, pending: list[_Pending], replies: list[Any]) -> list[_Pending]:
        by_node: dict[str, tuple[ClusterNode, list[_Pending]]] = {}
        for item in pending:
            node = self._node_for(item)
            by_node.setdefault(node.name, (node, []))[1].append(item)
        again: list[_Pending] = []
        refresh = pause = False
        for node, items in by_node.values():
            results = self._send(node, items)
            for item, result in zip(items, results, strict=True):
                item.ask = None
                if isinstance(result, MovedError):
                    refresh = True
                elif isinstance(result, AskError):
                    item.ask = (result.host, result.port)
                elif isinstance(result, (TryAgainError, ClusterDownError)):
                    pause = True
                elif isinstance(result, NoScriptError):
                    self._load(node, item.call.script)
                elif isinstance(result, Exception):
                    raise result
                else:
                    replies[item.index] = result
                    continue
                again.append(item)
        if refresh:
            self._refresh()
        if pause:
            time.sleep(RETRY_PAUSE_S)
        return again

    def _node_for(self, item: _Pending) -> ClusterNode:
        if item.ask is not None:
            host, port = item.ask
            node = self._client.get_node(host=host, port=port)
            if node is None:  # a node we have not met yet: learn the map first
                self._refresh()
                node = self._client.get_node(host=host, port=port)
            if node is not None:
                asked: ClusterNode = node
                return asked
            item.ask = None
        return self._primary(item.slot)

    def _send(self, node: ClusterNode, items: Sequence[_Pending]) -> list[Any]:
        """The node's calls in one pipeline on one connection, then WAIT on it."""
        try:
            wanted = self._replicas_to_wait_for(node)
            pipe = self._client.get_redis_connection(node).pipeline(transaction=False)
            for item in items:
                if item.ask is not None:
                    pipe.execute_command("ASKING")
                call = item.call
                sha = self._sha(call.script)
                pipe.execute_command("EVALSHA", sha, len(call.keys), *call.keys, *call.argv)
            if wanted > 0:
                pipe.execute_command("WAIT", wanted, self.wait_timeout_ms)
            results: list[Any] = pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError):
            # A node is gone (a failover may be starting): read the map again so the
            # next attempt goes wherever its slots are served now.
            self._refresh()
            raise
        if wanted > 0:
            acked = results.pop()
            if isinstance(acked, Exception):
                raise acked
            if int(acked) < wanted:
                # A replica may have died: the next attempt asks the master again.
                self._roles.pop(node.name, None)
                raise ReplicationError(
                    f"{node.name}: writes confirmed by {acked} of {wanted} "
                    f"replica(s) within {self.wait_timeout_ms} ms"
                )
        # Drop the ASKING replies: one per item that asked.
        out: list[Any] = []
        position = 0
        for item in items:
            if item.ask is not None:
                position += 1
            out.append(results[position])
            position += 1
        return out

    def _replicas_to_wait_for(self, node: ClusterNode) -> int:
        """``replica_acks``, or fewer if ``node`` has fewer replicas connected now.

        Asked of the master itself (``ROLE``, at most once a ``ROLE_TTL_S``): the
        client's slot map only changes on a redirection, so it can miss a replica for
        long. A replica that is connected but stalled still counts, and fails the
        batch when it does not confirm in time.
        """
        if self.replica_acks == 0:
            return 0
        checked = self._roles.get(node.name)
        now = time.monotonic()
        if checked is None or now - checked[0] > ROLE_TTL_S:
            role = self._client.get_redis_connection(node).execute_command("ROLE")
            checked = self._roles[node.name] = (
                now,
                len(role[2]) if role[0] in (b"master", "master") else 0,
            )
        wanted = min(self.replica_acks, checked[1])
        if wanted < self.replica_acks and node.name not in self._one_copy:
            self._one_copy.add(node.name)
            logger.warning(
                "%s has %d replica(s) connected of the %d to wait for: its writes are "
                "confirmed by fewer copies until one returns", node.name, wanted, self.replica_acks,
            )  # fmt: skip
        elif wanted == self.replica_acks and node.name in self._one_copy:
            self._one_copy.discard(node.name)
            logger.warning("%s has its replicas back: writes wait for %d", node.name, wanted)
        return wanted

    def _sha(self, script: str) -> str:
        # SCRIPT LOAD goes to every master; a NOSCRIPT later (a promoted replica, a
        # restart) loads it on that node alone (_load).
        return self._shas.sha(self._client, script)

    def _load(self, node: ClusterNode, script: str) -> None:
        self._client.get_redis_connection(node).script_load(script)
