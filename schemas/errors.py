"""Errors raised while reading records from the outside world."""

from __future__ import annotations


class ContractError(Exception):
    """Root of every error the contracts package raises."""


class InvalidRecord(ContractError):
    """A record that breaks its contract; ``kind`` names the rule it broke.

    Consumers never let this escape a batch: it goes to the dead-letter topic with
    ``str(error)`` as the reason and ``kind`` as a machine-readable category.
    """

    kind = "invalid"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MalformedRecord(InvalidRecord):
    """The bytes are not a JSON document at all (truncated, binary, wrong encoding)."""

    kind = "malformed"


class SchemaViolation(InvalidRecord):
    """Valid JSON whose fields have the wrong type, are missing, or fall outside their range."""

    kind = "schema"


class OversizedRecord(InvalidRecord):
    """More bytes than the record type allows; refused before parsing."""

    kind = "oversized"


class ImplausibleTimestamp(InvalidRecord):
    """An event time too far from the wall clock to be real (or given in seconds, not ms)."""

    kind = "timestamp"


# Every kind the contracts' errors carry: the label values of the dead-letter counters,
# which exist at 0 from start so that the first dead letter of a kind shows in rate().
INVALID_RECORD_KINDS: tuple[str, ...] = tuple(
    error.kind
    for error in (MalformedRecord, SchemaViolation, OversizedRecord, ImplausibleTimestamp)
)
