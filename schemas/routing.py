"""Traffic routing between model versions: who sets it, who reads it, and how users split.

The routing of one served model lives in one Redis key, ``<project>:routing:<model>``
(inside the project's keys, so the secured stack's ACLs already cover it): a JSON
:class:`Routing` naming two or more :class:`Variant` s, each a Triton version with a
share of the users. The canary controller (``python -m inference.serving canary``)
or an operator writes it; every worker polls it and applies a change within its poll
interval, without a restart. No key means no split: every request goes to the
version Triton serves by default (the newest it has loaded).

A user's variant is a pure function of the user id and the shares: the id hashes
to one of :data:`BUCKETS` buckets, and the variants own consecutive ranges of
buckets in the order they are listed. A canary listed first keeps its users as
its share grows (1% → 5% → 25%: the first 1% stay in), and a user never flips
between variants while the shares stay the same, whichever worker answers.

Every worker also reports back, in the hash ``<project>:routing:<model>:acks`` (one
field per worker), a :class:`RoutingAck`: the routing it has in force and the
versions it may still ask for by name, counting batches still in flight under an
older routing. A controller retires a version only once every live worker's
acknowledgement of the routing it published leaves that version out
(:mod:`inference.serving.drain`): unloading it earlier fails the requests still
routed to it.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

import msgspec
from msgspec import Meta

from schemas.records import EpochMillis

# Basis points: a share is accurate to 0.01% of the users.
BUCKETS = 10_000
VariantName = Annotated[
    str, Meta(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9._-]+$", description="Label.")
]


class RoutingError(ValueError):
    """A routing document that cannot be applied (the reason says why)."""


class Variant(msgspec.Struct, frozen=True):
    """One served version and the percentage of users it answers."""

    name: VariantName
    version: Annotated[int, Meta(ge=1, description="The Triton version the worker asks for.")]
    share_pct: Annotated[float, Meta(ge=0, le=100)]
    # Which registry version the Triton version was published from, copied into every
    # recommendation it scores ("streamrec-ranker/7"); empty when it was not registered.
    registry_version: Annotated[str, Meta(max_length=128)] = ""


class Routing(msgspec.Struct, frozen=True):
    """The split of one model's traffic; ``revision`` grows with every change."""

    model: Annotated[str, Meta(min_length=1, max_length=64)]
    variants: Annotated[list[Variant], Meta(min_length=1, max_length=8)]
    revision: Annotated[int, Meta(ge=0)]
    updated_at: EpochMillis
    reason: Annotated[str, Meta(max_length=512)] = ""


def routing_key(project: str, model: str) -> str:
    return f"{project}:routing:{model}"


def ack_key(project: str, model: str) -> str:
    """The hash of the workers' acknowledgements (inside the routing keys' pattern)."""
    return f"{routing_key(project, model)}:acks"


class RoutingAck(msgspec.Struct, frozen=True):
    """What one worker has in force, written by it every routing poll.

    ``revision`` and ``updated_at`` are those of the routing it read last (None: no
    routing key, every request asks Triton's default version). ``in_use`` are the
    versions it may still ask for by name: those with a share in that routing and in
    any batch still being scored under an older one; ``unversioned`` says whether
    such a batch, or the routing in force, asks for Triton's default version.
    """

    worker: Annotated[str, Meta(min_length=1, max_length=128)]
    revision: Annotated[int, Meta(ge=0)] | None
    updated_at: EpochMillis | None
    in_use: list[Annotated[int, Meta(ge=1)]]
    unversioned: bool
    at_ms: EpochMillis

    def has_seen(self, routing: Routing) -> bool:
        """Whether this worker had read exactly ``routing`` when it wrote this (a later
        routing from another controller does not count: its acks are that one's)."""
        return self.revision == routing.revision and self.updated_at == routing.updated_at


_ACK_DECODER = msgspec.json.Decoder(RoutingAck)


def decode_ack(raw: bytes) -> RoutingAck:
    try:
        return _ACK_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise RoutingError(f"routing acknowledgement: {error}") from None


def encode_ack(ack: RoutingAck) -> bytes:
    return msgspec.json.encode(ack)


def versions_in_use(routing: Routing | None) -> frozenset[int]:
    """The versions ``routing`` sends users to by name (a 0% share sends none)."""
    if routing is None:
        return frozenset()
    return frozenset(v.version for v in routing.variants if v.share_pct > 0)


def check(routing: Routing) -> Routing:
    """``routing`` if it can be applied: distinct names and versions, shares summing to 100."""
    names = [v.name for v in routing.variants]
    if len(set(names)) != len(names):
        raise RoutingError(f"variant names repeat: {names}")
    versions = [v.version for v in routing.variants]
    if len(set(versions)) != len(versions):
        raise RoutingError(f"two variants ask for the same version: {versions}")
    total = sum(v.share_pct for v in routing.variants)
    if abs(total - 100) > 1e-6:
        raise RoutingError(f"shares sum to {total:g}%, not 100%")
    return routing


_DECODER = msgspec.json.Decoder(Routing)


def decode(raw: bytes) -> Routing:
    try:
        return check(_DECODER.decode(raw))
    except msgspec.ValidationError as error:
        raise RoutingError(f"routing document: {error}") from None
    except msgspec.DecodeError as error:
        raise RoutingError(f"routing document is not JSON: {error}") from None


def encode(routing: Routing) -> bytes:
    return msgspec.json.encode(check(routing))


def bucket(user_id: int) -> int:
    """The user's bucket in ``[0, BUCKETS)``: stable across processes, hosts and versions.

    BLAKE2b rather than ``hash()``: Python salts the string hash per process, and two
    workers must put a user in the same variant.
    """
    digest = hashlib.blake2b(user_id.to_bytes(8, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % BUCKETS


def boundaries(routing: Routing) -> list[int]:
    """Each variant's exclusive upper bucket, in order (the last is :data:`BUCKETS`)."""
    edges, cumulative = [], 0.0
    for variant in routing.variants:
        cumulative += variant.share_pct
        edges.append(round(cumulative * BUCKETS / 100))
    edges[-1] = BUCKETS
    return edges


def variant_of(routing: Routing, user_id: int, edges: list[int] | None = None) -> Variant:
    """The variant that answers ``user_id`` (``edges``: :func:`boundaries`, precomputed)."""
    b = bucket(user_id)
    for variant, edge in zip(routing.variants, edges or boundaries(routing), strict=True):
        if b < edge:
            return variant
    return routing.variants[-1]  # unreachable: the last edge is BUCKETS
