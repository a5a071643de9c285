"""Record types of every topic, with the static half of their validation.

Ranges and enums live in the types (``msgspec.Meta``) so that one definition
drives the fast decoder and the exported JSON Schema. Checks that depend on the
wall clock (how far in the future an event may be) live in :mod:`schemas.codec`.
Unknown fields are ignored, so producers can add fields without breaking consumers.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

# Ids must survive a trip through JavaScript's doubles, hence 2**53 - 1.
MAX_SAFE_INT = 2**53 - 1
# 1990-01-01 and 2100-01-01 in epoch milliseconds: anything outside is a unit
# mistake (seconds instead of milliseconds) or garbage, never a real event.
MIN_EPOCH_MS = 631_152_000_000
MAX_EPOCH_MS = 4_102_444_800_000

UserId = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT, description="User id, a positive integer.")]
ItemId = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT, description="Item id, a positive integer.")]
CategoryId = Annotated[
    int, Meta(ge=1, le=MAX_SAFE_INT, description="Item category id, a positive integer.")
]
EpochMillis = Annotated[
    int,
    Meta(
        ge=MIN_EPOCH_MS,
        le=MAX_EPOCH_MS,
        description="Unix time in milliseconds (UTC). Consumers also refuse times "
        "too far ahead of their own clock.",
    ),
]
Behavior = Literal["pv", "cart", "fav", "buy"]
Route = Literal["embedding", "covisit", "recent", "trend", "request", "popular"]
# Whether an answer's features included the request's trigger event: the online
# store already had it, the worker folded it in itself, or neither (flagged).
TriggerFeatures = Literal["store", "folded", "missing"]
RequestId = Annotated[
    str,
    Meta(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$", description="Caller's id."),
]
FeatureName = Annotated[str, Meta(min_length=1, max_length=256)]
Score = Annotated[float, Meta(description="Ranker score; higher is better.")]

BEHAVIORS: tuple[Behavior, ...] = ("pv", "cart", "fav", "buy")
MAX_REQUEST_CANDIDATES = 1000
MAX_K = 200


class BehaviorEvent(msgspec.Struct, frozen=True):
    """One user action on one item (topic ``user-behavior``, key ``user_id``)."""

    user_id: UserId
    item_id: ItemId
    category_id: CategoryId
    behavior: Annotated[Behavior, Meta(description="pv=view, cart, fav=favourite, buy.")]
    ts: EpochMillis


class RecRequest(msgspec.Struct, frozen=True):
    """Ask for ``k`` recommendations for a user (topic ``rec-requests``, key ``user_id``).

    ``candidates`` lets a caller rank its own list (a campaign); without it the
    worker recalls candidates itself. ``trigger`` is the event that prompted the
    request (the click that just happened): the worker makes sure the answer's
    features include it (read-your-writes) and says so in the answer.
    """

    request_id: RequestId
    user_id: UserId
    ts: EpochMillis
    k: Annotated[int, Meta(ge=1, le=MAX_K)] = 20
    candidates: Annotated[list[ItemId], Meta(max_length=MAX_REQUEST_CANDIDATES)] | None = None
    context: Annotated[dict[str, str], Meta(max_length=32)] | None = None
    trigger: BehaviorEvent | None = None


class RecItem(msgspec.Struct, frozen=True):
    """One recommended item, with the recall route that proposed it."""

    item_id: ItemId
    score: Score
    route: Route


class Recommendation(msgspec.Struct, frozen=True):
    """The answer to one request (topic ``recommendations``, key ``user_id``).

    ``degraded`` is true when a part failed and a fallback produced the items;
    ``degraded_reasons`` says which. ``trigger_features`` says whether the
    features included the request's trigger event (absent without a trigger).
    ``model_version`` is the served model and the version that scored
    (``ranker_python:3``); under a traffic split ``variant`` names the user's
    variant and ``registry_version`` the model registry's version of it
    (``streamrec-ranker/7``), both empty otherwise. ``rerouted_from`` is the
    variant's version when Triton had no ready copy of it (a version being loaded
    or unloaded) and Triton's default version scored instead (``model_version``
    says which): the answer is ranked, not degraded, but not by the variant's model.
    """

    request_id: RequestId
    user_id: UserId
    items: Annotated[list[RecItem], Meta(max_length=MAX_K)]
    model_version: Annotated[str, Meta(max_length=128)]
    features_at: EpochMillis | None
    produced_at: EpochMillis
    degraded: bool = False
    degraded_reasons: list[Annotated[str, Meta(max_length=256)]] = []
    trigger_features: TriggerFeatures | None = None
    variant: Annotated[str, Meta(max_length=32)] = ""
    registry_version: Annotated[str, Meta(max_length=128)] = ""
    rerouted_from: Annotated[int, Meta(ge=1)] | None = None


class FeatureDrift(msgspec.Struct, frozen=True):
    """The drift verdict for one feature in one check."""

    feature: FeatureName
    method: Annotated[str, Meta(max_length=64)]
    score: float
    threshold: float
    drifted: bool


class DriftAlert(msgspec.Struct, frozen=True):
    """One drift check over a window of features (topic ``feature-drift``).

    ``status`` is ``insufficient_data`` when the window had too few rows to judge.
    """

    check_id: RequestId
    checked_at: EpochMillis
    window_start: EpochMillis
    window_end: EpochMillis
    rows: Annotated[int, Meta(ge=0)]
    reference_rows: Annotated[int, Meta(ge=0)]
    status: Literal["ok", "drift", "insufficient_data"]
    drifted_share: Annotated[float, Meta(ge=0.0, le=1.0)]
    features: list[FeatureDrift]


class DeadLetter(msgspec.Struct, frozen=True):
    """A record a consumer could not use (topic ``<source>.dlq``).

    ``original`` holds the exact bytes consumed (base64 in JSON) so the record can
    be repaired and replayed; ``original_size`` guards against silent truncation.
    """

    original: bytes
    original_size: Annotated[int, Meta(ge=0)]
    key: bytes | None
    error: str
    error_kind: Annotated[str, Meta(max_length=64)]
    source_topic: str
    source_partition: Annotated[int, Meta(ge=-1)]
    source_offset: Annotated[int, Meta(ge=-1)]
    consumer: Annotated[str, Meta(max_length=256)]
    failed_at: EpochMillis
