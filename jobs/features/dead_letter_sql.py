"""The job's dead letters as Flink SQL: every refused event, and never one the topic refuses.

A dead letter carries the original bytes in base64, a third larger than the
event, so an event near Kafka's default 1 MiB limit makes a dead letter over it.
The sink's producer therefore allows ``dead_letter_max_bytes`` (the dead-letter
topic's own ``max.message.bytes``), and a dead letter that would still exceed it
keeps only a prefix of the original. The cut is marked the way
:class:`schemas.records.DeadLetter` defines: ``original`` shorter than
``original_size``, and the error text says how many bytes were kept. A record
the producer or the broker refused would fail the job, and the restart would
meet the same record again: a crash loop over one bad event.
"""

from __future__ import annotations

from jobs.features.settings import FeatureJobSettings
from jobs.features.sql_quote import string_literal

# Room in a dead letter for everything but the original: the Kafka key (raw and
# in base64), the error text (each character up to 6 bytes as a JSON escape),
# the topic, consumer and numbers, and the record and batch headers the broker
# counts against max.message.bytes (about 100 bytes).
RESERVE_BYTES = 64 * 1024
# Longer keys are not kept (the error says so); with the reserve they bound the rest.
KEY_MAX_BYTES = 16 * 1024
ERROR_MAX_CHARS = 2048
_NOW_MS = "(UNIX_TIMESTAMP() * 1000)"


def original_budget_chars(limit_bytes: int) -> int:
    """Base64 characters of the original a dead letter of at most ``limit_bytes`` can hold.

    A whole number of base64 quads, so the kept prefix decodes to exactly
    ``chars / 4 * 3`` bytes of the original.
    """
    return max(0, (limit_bytes - RESERVE_BYTES) // 4 * 4)


def base64_bytes(b64: str) -> str:
    """Byte length of the data a base64 column encodes (Flink SQL has no OCTET_LENGTH for BYTES)."""
    padding = f"(CHAR_LENGTH({b64}) - CHAR_LENGTH(TRIM(TRAILING '=' FROM {b64})))"
    return f"(CHAR_LENGTH({b64}) / 4 * 3 - {padding})"


def sink_options(settings: FeatureJobSettings) -> dict[str, str]:
    """The dead-letter sink's connector options beyond the topic and brokers."""
    return {
        "key.format": "raw",
        "key.fields": "msg_key",
        "value.format": "raw",
        "value.fields-include": "EXCEPT_KEY",
        "sink.delivery-guarantee": "at-least-once",
        # The producer's default (1 MiB) refuses the dead letter of an event near 1 MiB.
        "properties.max.request.size": str(settings.dead_letter_max_bytes),
    }


def _kept_parts() -> str:
    """Each refused event's base64 original, key and sizes, the key and error bounded."""
    key_b64 = "TO_BASE64(msg_key)"
    return f"""SELECT msg_key, src_topic, src_partition, src_offset, error_kind, b64,
  {base64_bytes("b64")} AS size,
  CASE WHEN {base64_bytes(key_b64)} <= {KEY_MAX_BYTES} THEN {key_b64} END AS key_b64,
  COALESCE({base64_bytes(key_b64)}, 0) AS key_size,
  SUBSTRING(error, 1, {ERROR_MAX_CHARS}) AS error
FROM (
  SELECT *, COALESCE(TO_BASE64(body), '') AS b64 FROM behavior_classified
  WHERE error_kind IS NOT NULL
)"""


def dead_letter_insert(settings: FeatureJobSettings) -> str:
    """Refused events as :class:`schemas.records.DeadLetter` JSON, original bytes in base64."""
    chars = original_budget_chars(settings.dead_letter_max_bytes)
    cut = f"CHAR_LENGTH(b64) > {chars}"
    notes = (
        f"CASE WHEN {cut} THEN ' (original cut to fit the dead-letter topic: first "
        f"{chars // 4 * 3} of ' || CAST(size AS STRING) || ' bytes kept)' ELSE '' END"
        f" || CASE WHEN key_size > {KEY_MAX_BYTES} THEN ' (key of ' || CAST(key_size AS STRING)"
        f" || ' bytes not kept)' ELSE '' END"
    )
    return f"""INSERT INTO dead_letter_sink
SELECT CASE WHEN key_size <= {KEY_MAX_BYTES} THEN msg_key END, JSON_OBJECT(
  'original' VALUE CASE WHEN {cut} THEN SUBSTRING(b64, 1, {chars}) ELSE b64 END,
  'original_size' VALUE size,
  'key' VALUE key_b64,
  'error' VALUE error || {notes},
  'error_kind' VALUE error_kind,
  'source_topic' VALUE src_topic,
  'source_partition' VALUE src_partition,
  'source_offset' VALUE src_offset,
  'consumer' VALUE {string_literal(settings.group_id)},
  'failed_at' VALUE {_NOW_MS}
  NULL ON NULL)
FROM ({_kept_parts()})"""
