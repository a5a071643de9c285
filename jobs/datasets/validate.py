"""Turning a parsed row into a validated event, or a reason why not."""

from __future__ import annotations

import msgspec

from schemas.records import BehaviorEvent


def to_event(
    user_id: int, item_id: int, category_id: int, behavior: str, ts_ms: int
) -> BehaviorEvent | str:
    """The event, validated against its contract, or the contract's complaint."""
    try:
        return msgspec.convert(
            {
                "user_id": user_id,
                "item_id": item_id,
                "category_id": category_id,
                "behavior": behavior,
                "ts": ts_ms,
            },
            BehaviorEvent,
        )
    except msgspec.ValidationError as exc:
        return str(exc)
