"""The traffic split's contract: deterministic, proportional, sticky as a canary grows."""

from __future__ import annotations

import pytest

from schemas.routing import (
    BUCKETS,
    Routing,
    RoutingError,
    Variant,
    bucket,
    decode,
    encode,
    routing_key,
    variant_of,
)

NOW = 1_700_000_000_000


def routing(*variants: tuple[str, int, float]) -> Routing:
    return Routing("ranker_python", [Variant(*v) for v in variants], revision=1, updated_at=NOW)


def test_a_fifty_fifty_split_gives_each_variant_its_share_within_two_points() -> None:
    split = routing(("a", 1, 50.0), ("b", 2, 50.0))
    users = range(1, 10_001)
    share_a = sum(variant_of(split, u).name == "a" for u in users) / len(users)
    assert abs(share_a - 0.5) < 0.02


@pytest.mark.parametrize("share", [1.0, 5.0, 25.0])
def test_small_shares_are_proportional(share: float) -> None:
    split = routing(("canary", 2, share), ("champion", 1, 100 - share))
    users = range(1, 100_001)
    got = sum(variant_of(split, u).name == "canary" for u in users) / len(users) * 100
    assert abs(got - share) < max(0.2, share * 0.05)


def test_a_growing_canary_keeps_its_users() -> None:
    before = routing(("canary", 2, 5.0), ("champion", 1, 95.0))
    after = routing(("canary", 2, 25.0), ("champion", 1, 75.0))
    for user in range(1, 20_001):
        if variant_of(before, user).name == "canary":
            assert variant_of(after, user).name == "canary"


def test_the_bucket_is_the_same_in_every_process() -> None:
    # Fixed values: a change of hash would reshuffle every running experiment.
    assert 0 <= bucket(2**53 - 1) < BUCKETS
    assert bucket(42) == 2953


def test_a_zero_share_variant_gets_nobody() -> None:
    split = routing(("canary", 2, 0.0), ("champion", 1, 100.0))
    assert {variant_of(split, u).name for u in range(1, 5_000)} == {"champion"}


@pytest.mark.parametrize(
    ("variants", "reason"),
    [
        ([("a", 1, 50.0), ("b", 2, 40.0)], "sum to 90"),
        ([("a", 1, 50.0), ("a", 2, 50.0)], "names repeat"),
        ([("a", 1, 50.0), ("b", 1, 50.0)], "same version"),
    ],
)
def test_a_routing_that_cannot_be_applied_is_refused(
    variants: list[tuple[str, int, float]], reason: str
) -> None:
    with pytest.raises(RoutingError, match=reason):
        encode(routing(*variants))


@pytest.mark.parametrize(
    "raw",
    [b"not json", b"{}", b'{"model":"m","variants":[],"revision":1,"updated_at":1700000000000}',
     b'{"model":"m","variants":[{"name":"a","version":0,"share_pct":100}],"revision":1,'
     b'"updated_at":1700000000000}'],
)  # fmt: skip
def test_undecodable_documents_raise_the_routing_error(raw: bytes) -> None:
    with pytest.raises(RoutingError):
        decode(raw)


def test_round_trip_and_key() -> None:
    split = routing(("a", 1, 30.0), ("b", 2, 70.0))
    assert decode(encode(split)) == split
    assert routing_key("streamrec", "ranker_python") == "streamrec:routing:ranker_python"
