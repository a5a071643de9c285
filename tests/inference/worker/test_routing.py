"""The worker's routing watcher: what it keeps when the key is unreadable (no services)."""

from __future__ import annotations

import redis

from inference.worker.routing import RoutingWatcher, describe
from schemas.routing import Routing, RoutingAck, Variant, encode

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


def test_the_acknowledgement_names_the_versions_of_batches_still_being_scored() -> None:
    key, sent = Key(encode(SPLIT)), list[RoutingAck]()
    watcher = RoutingWatcher(key.read, 1000, report=sent.append, worker="w")
    assert sent[-1].in_use == [1, 2] and sent[-1].revision == 3 and not sent[-1].unversioned
    scoring = watcher.acquire()  # a batch of the split is being scored...
    ended = Routing("ranker_python", [Variant("champion", 1, 100.0)], 4, NOW + 1)
    key.value = encode(ended)
    watcher.refresh()
    # ...so the canary's version is still in use, though the routing in force dropped it.
    assert sent[-1].revision == 4 and sent[-1].updated_at == NOW + 1
    assert sent[-1].in_use == [1, 2] and not sent[-1].has_seen(SPLIT)
    watcher.release(scoring)
    watcher.refresh()
    assert sent[-1].in_use == [1] and sent[-1].has_seen(ended)


def test_without_a_split_the_acknowledgement_says_unversioned_and_a_zero_share_is_unused() -> None:
    key, sent = Key(None), list[RoutingAck]()
    watcher = RoutingWatcher(key.read, 1000, report=sent.append)
    assert sent[-1].unversioned and sent[-1].in_use == [] and sent[-1].revision is None
    key.value = encode(
        Routing("m", [Variant("canary", 2, 0.0), Variant("champion", 1, 100.0)], 5, NOW)
    )
    watcher.refresh()
    latest = sent[-1]
    assert not latest.unversioned
    assert latest.in_use == [1]


def test_an_acknowledgement_that_cannot_be_written_never_stops_the_routing() -> None:
    key = Key(encode(SPLIT))

    def refuse(_ack: RoutingAck) -> None:
        raise redis.ResponseError("NOPERM")

    watcher = RoutingWatcher(key.read, 1000, report=refuse)
    assert watcher.view.routing == SPLIT
