"""Decoder of the ``feature-updates`` changelog: the tagged union, with the usual checks."""

from __future__ import annotations

from typing import Any

from schemas.codec import KIB, RecordCodec
from schemas.features import FeatureUpdate

# A category's top items or a user's window may carry a few hundred packed strings.
FEATURE_UPDATE_MAX_BYTES = 256 * KIB


def feature_update_codec(**overrides: Any) -> RecordCodec[FeatureUpdate]:
    """Size, JSON, schema and future-time checks, like every other record's codec."""
    settings: dict[str, Any] = {"max_bytes": FEATURE_UPDATE_MAX_BYTES} | overrides
    return RecordCodec(FeatureUpdate, time_fields=("latest_ts", "window_end"), **settings)
