"""Delivery counts of the replay's two producers (events, requests) add up."""

from __future__ import annotations

from jobs.replay.producer import DeliveryStats


def test_two_producers_counts_add_and_keep_five_errors() -> None:
    events = DeliveryStats(sent=10, delivered=8, failed=2, errors=["a", "b", "c", "d"])
    requests = DeliveryStats(sent=3, delivered=2, failed=1, errors=["e", "f"])
    both = events.plus(requests)
    assert (both.sent, both.delivered, both.failed, both.pending) == (13, 10, 3, 0)
    assert both.errors == ["a", "b", "c", "d", "e"]
