"""Comparing what was replayed with what came back (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from schemas.records import BehaviorEvent


@dataclass(frozen=True)
class Consumed:
    """An event as read back, with where it was stored."""

    partition: int
    offset: int
    event: BehaviorEvent


@dataclass(frozen=True)
class RoundTrip:
    sent: int
    received: int
    missing: int
    duplicated: int
    users_split_across_partitions: int
    users_out_of_order: int

    @property
    def exact(self) -> bool:
        """Nothing lost, nothing duplicated, every user on one partition and in order."""
        return (
            self.sent == self.received
            and not self.missing
            and not self.duplicated
            and not self.users_split_across_partitions
            and not self.users_out_of_order
        )


def compare(sent: Iterable[BehaviorEvent], received: Iterable[Consumed]) -> RoundTrip:
    """Multiset equality of events, plus per-user partition and order checks.

    Order is judged against the sending order: within one user, the offsets must
    list the user's events in exactly the order they were produced.
    """
    sent_list = list(sent)
    received_list = sorted(received, key=lambda c: (c.partition, c.offset))
    sent_counts = Counter(sent_list)
    received_counts = Counter(c.event for c in received_list)
    missing = sum((sent_counts - received_counts).values())
    duplicated = sum((received_counts - sent_counts).values())
    return RoundTrip(
        sent=len(sent_list),
        received=len(received_list),
        missing=missing,
        duplicated=duplicated,
        users_split_across_partitions=_split_users(received_list),
        users_out_of_order=_out_of_order_users(sent_list, received_list),
    )


def _split_users(received: list[Consumed]) -> int:
    partitions: dict[int, set[int]] = {}
    for item in received:
        partitions.setdefault(item.event.user_id, set()).add(item.partition)
    return sum(1 for parts in partitions.values() if len(parts) > 1)


def _per_user(events: Iterable[BehaviorEvent]) -> dict[int, list[BehaviorEvent]]:
    by_user: dict[int, list[BehaviorEvent]] = {}
    for event in events:
        by_user.setdefault(event.user_id, []).append(event)
    return by_user


def _out_of_order_users(sent: list[BehaviorEvent], received: list[Consumed]) -> int:
    expected = _per_user(sent)
    actual = _per_user(c.event for c in received)
    return sum(1 for user, events in actual.items() if expected.get(user) != events)
