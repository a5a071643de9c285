"""Rows many requests share (an item's trends, a category's top items), kept for a short TTL.

Every request ranks about a hundred candidates, and at a few hundred requests a
second most of them were read, decoded and thrown away a few milliseconds
earlier: reading and decoding the candidates' item rows was 40% of the worker's
CPU at 300 requests/s (py-spy, ``make bench-sla``'s setup). These rows change
when a window slides (every five minutes of event time) or a trend is
recomputed, so reusing one for ``STREAMREC_WORKER_SHARED_ROWS_TTL_MS`` bounds how
much older than the store an answer's item features can be. The user's own rows
and the stock flags are never cached: they are what "the click that just
happened" and "never recommend what is sold out" depend on.

A miss caches ``None`` as well (an item without a trends row stays without one
until the entry expires). The cache holds at most ``max_entries`` keys; when
full, expired entries go first, then everything (a rare, cheap reset that costs
one batch its hits).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedRows(Generic[K, V]):
    """``key -> value`` with a common time to live; ``ttl_s`` 0 keeps nothing."""

    def __init__(
        self,
        ttl_s: float,
        max_entries: int = 200_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}
        self.hits = 0
        self.misses = 0

    def split(self, keys: Sequence[K]) -> tuple[dict[K, V], list[K]]:
        """The fresh values among ``keys``, and the keys to read (in their given order)."""
        now = self._clock()
        found: dict[K, V] = {}
        missing: list[K] = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry[0] > now:
                found[key] = entry[1]
            else:
                missing.append(key)
        self.hits += len(found)
        self.misses += len(missing)
        return found, missing

    def fill(self, found: dict[K, V], keys: Sequence[K], values: Sequence[V]) -> None:
        """Keep ``values`` read for the ``keys`` :meth:`split` said were missing, and add
        them to ``found``."""
        pairs = list(zip(keys, values, strict=True))
        self.put(pairs)
        found.update(pairs)

    def put(self, pairs: Iterable[tuple[K, V]]) -> None:
        if self.ttl_s <= 0:
            return
        now = self._clock()
        expires = now + self.ttl_s
        for key, value in pairs:
            self._entries[key] = (expires, value)
        if len(self._entries) > self.max_entries:
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            if len(self._entries) > self.max_entries:
                self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
