"""Moving a recorded stream to the present, keeping the gaps between events."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from schemas.records import BehaviorEvent


@dataclass
class TimeShift:
    """Adds one offset to every event so the first lands at ``start_ms``.

    Recorded data is years old; a live pipeline's freshness and lateness checks
    want events that happen now.
    """

    start_ms: int
    _offset: int | None = None

    def apply(self, event: BehaviorEvent) -> BehaviorEvent:
        if self._offset is None:
            self._offset = self.start_ms - event.ts
        return msgspec.structs.replace(event, ts=event.ts + self._offset)
