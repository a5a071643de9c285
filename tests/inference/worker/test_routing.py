"""The worker's routing watcher: what it keeps when the key is unreadable (no services)."""

from __future__ import annotations

import redis

from inference.worker.routing import RoutingWatcher, describe
from schemas.routing import Routing, Variant, encode

NOW = 1_700_000_000_000
SPLIT = Routing("ranker_python", [Variant("canary", 2, 10.0), Variant("champion", 1, 90.0)], 3, NOW)


class Key:
    """The routing key: a value, absent (None), or an error when read."""

    def __init__(self, value: bytes | Exception | None) -> None:
        self.value = value

    def read(self) -> bytes | None:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


def test_a_split_is_in_force_from_the_start_and_changes_are_reported() -> None:
    key, seen = Key(encode(SPLIT)), list[Routing | None]()
    watcher = RoutingWatcher(key.read, 1000, seen.append)
    assert watcher.view.routing == SPLIT and seen == [SPLIT]
    assert watcher.view.variant(7) is not None
    watcher.refresh()
    assert seen == [SPLIT]  # unchanged: not reported again


def test_an_unreadable_key_keeps_the_last_split_and_a_deleted_one_ends_it() -> None:
    key, seen = Key(encode(SPLIT)), list[Routing | None]()
    watcher = RoutingWatcher(key.read, 1000, seen.append)
    for broken in (redis.ConnectionError("down"), b"{not json", b'{"model": "x"}'):
        key.value = broken
        watcher.refresh()
        assert watcher.view.routing == SPLIT
    key.value = None
    watcher.refresh()
    assert watcher.view.routing is None and watcher.view.variant(7) is None
    assert seen == [SPLIT, None]


def test_no_key_means_no_split() -> None:
    watcher = RoutingWatcher(Key(None).read, 1000)
    assert watcher.view.variant(1) is None
    assert describe(None).startswith("no split")
    assert describe(SPLIT) == "revision 3: canary v2 10%, champion v1 90%"
