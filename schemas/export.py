"""Write the JSON Schema files in ``schemas/json/`` from the record types.

``python -m schemas.export`` rewrites them; ``--check`` exits 1 when a file is
stale, which the test suite also asserts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from schemas.codec import (
    RecordCodec,
    dead_letter_codec,
    drift_codec,
    event_codec,
    recommendation_codec,
    request_codec,
)

JSON_DIR = Path(__file__).with_name("json")
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# File stem -> (codec enforcing the contract, topic it describes).
CONTRACTS: dict[str, tuple[RecordCodec[Any], str]] = {
    "behavior-event": (event_codec(), "user-behavior"),
    "rec-request": (request_codec(), "rec-requests"),
    "recommendation": (recommendation_codec(), "recommendations"),
    "drift-alert": (drift_codec(), "feature-drift"),
    "dead-letter": (dead_letter_codec(), "<topic>.dlq"),
}


def schema_document(stem: str) -> dict[str, Any]:
    """The JSON Schema for one contract, self-contained and with a stable key order."""
    codec, topic = CONTRACTS[stem]
    generated = msgspec.json.schema(codec.record_type)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"streamrec/{stem}.schema.json",
        "title": codec.record_type.__name__,
        "description": f"Value of a record on the `{topic}` topic, UTF-8 JSON, "
        f"at most {codec.max_bytes} bytes.",
        # Not a JSON Schema keyword: the size limit consumers enforce before parsing.
        "x-max-message-bytes": codec.max_bytes,
        **generated,
    }


def render(stem: str) -> str:
    return json.dumps(schema_document(stem), indent=2, sort_keys=False) + "\n"


def schema_path(stem: str) -> Path:
    return JSON_DIR / f"{stem}.schema.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args(argv)
    stale = [stem for stem in CONTRACTS if _read(schema_path(stem)) != render(stem)]
    if args.check:
        for stem in stale:
            print(f"stale: {schema_path(stem)} (run `make schemas`)", file=sys.stderr)
        return 1 if stale else 0
    JSON_DIR.mkdir(exist_ok=True)
    for stem in stale:
        schema_path(stem).write_text(render(stem))
        print(f"wrote {schema_path(stem)}")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
