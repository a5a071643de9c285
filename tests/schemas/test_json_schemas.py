"""The JSON Schema files and the Python types describe the same contract."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from schemas.errors import InvalidRecord
from schemas.export import CONTRACTS, main, render, schema_path

TS = 1511544070000
# Per contract: documents both sides must accept, then documents both must refuse.
SAMPLES: dict[str, tuple[list[Any], list[Any]]] = {
    "behavior-event": (
        [
            {"user_id": 1, "item_id": 2, "category_id": 3, "behavior": b, "ts": TS}
            for b in ("pv", "cart", "fav", "buy")
        ],
        [
            {"user_id": 1, "item_id": 2, "category_id": 3, "behavior": "click", "ts": TS},
            {"user_id": 0, "item_id": 2, "category_id": 3, "behavior": "pv", "ts": TS},
            {"user_id": 1, "item_id": 2, "category_id": 3, "behavior": "pv", "ts": 1511544070},
            {"user_id": 1, "item_id": 2.5, "category_id": 3, "behavior": "pv", "ts": TS},
            {"user_id": "1", "item_id": 2, "category_id": 3, "behavior": "pv", "ts": TS},
            {"item_id": 2, "category_id": 3, "behavior": "pv", "ts": TS},
            [1, 2, 3],
        ],
    ),
    "rec-request": (
        [
            {"request_id": "r-1", "user_id": 5, "ts": TS},
            {"request_id": "a.b:c_d-1", "user_id": 5, "ts": TS, "k": 200, "candidates": [1, 2],
             "context": {"page": "home"}},
            {"request_id": "r", "user_id": 5, "ts": TS, "candidates": None, "context": None},
        ],
        [
            {"request_id": "", "user_id": 5, "ts": TS},
            {"request_id": "r 1", "user_id": 5, "ts": TS},
            {"request_id": "r", "user_id": 5, "ts": TS, "k": 201},
            {"request_id": "r", "user_id": 5, "ts": TS, "candidates": [0]},
            {"request_id": "r", "user_id": 5, "ts": TS, "context": {"a": 1}},
        ],
    ),
    "recommendation": (
        [
            {"request_id": "r", "user_id": 5, "items": [{"item_id": 1, "score": 0.5,
             "route": "trend"}], "model_version": "din/3", "features_at": TS,
             "produced_at": TS, "degraded": True, "degraded_reasons": ["triton: timeout"]},
            {"request_id": "r", "user_id": 5, "items": [], "model_version": "",
             "features_at": None, "produced_at": TS},
        ],
        [
            {"request_id": "r", "user_id": 5, "items": [{"item_id": 1, "score": 0.5,
             "route": "magic"}], "model_version": "v", "features_at": None, "produced_at": TS},
            {"request_id": "r", "user_id": 5, "items": [], "model_version": "v",
             "produced_at": TS},
        ],
    ),
    "drift-alert": (
        [
            {"check_id": "c1", "checked_at": TS, "window_start": TS, "window_end": TS,
             "rows": 10, "reference_rows": 100, "status": "drift", "drifted_share": 0.5,
             "features": [{"feature": "seq_len", "method": "psi", "score": 0.3,
                           "threshold": 0.2, "drifted": True}]},
        ],
        [
            {"check_id": "c1", "checked_at": TS, "window_start": TS, "window_end": TS,
             "rows": 10, "reference_rows": 100, "status": "maybe", "drifted_share": 0.5,
             "features": []},
            {"check_id": "c1", "checked_at": TS, "window_start": TS, "window_end": TS,
             "rows": -1, "reference_rows": 100, "status": "ok", "drifted_share": 1.5,
             "features": []},
        ],
    ),
    "dead-letter": (
        [
            {"original": "eyJ4IjoxfQ==", "original_size": 7, "key": None, "error": "bad",
             "error_kind": "schema", "source_topic": "user-behavior", "source_partition": 0,
             "source_offset": 12, "consumer": "worker", "failed_at": TS},
        ],
        [
            {"original": "eyJ4IjoxfQ==", "original_size": -7, "key": None, "error": "bad",
             "error_kind": "schema", "source_topic": "user-behavior", "source_partition": 0,
             "source_offset": 12, "consumer": "worker", "failed_at": TS},
        ],
    ),
}  # fmt: skip


@pytest.mark.parametrize("stem", sorted(CONTRACTS))
def test_committed_schema_files_match_the_python_types(stem: str) -> None:
    assert schema_path(stem).read_text() == render(stem), "run `make schemas`"


def test_export_check_passes_on_the_committed_files() -> None:
    assert main(["--check"]) == 0


@pytest.mark.parametrize("stem", sorted(CONTRACTS))
def test_schema_files_are_valid_json_schema(stem: str) -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(schema_path(stem).read_text()))


def test_every_contract_has_samples() -> None:
    assert set(SAMPLES) == set(CONTRACTS)


@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_python_decoder_and_json_schema_agree(stem: str) -> None:
    codec = CONTRACTS[stem][0]
    validator = jsonschema.Draft202012Validator(json.loads(schema_path(stem).read_text()))
    accepted, refused = SAMPLES[stem]
    for document in accepted:
        assert validator.is_valid(document), document
        codec.decode(json.dumps(document).encode())
    for document in refused:
        assert not validator.is_valid(document), document
        with pytest.raises(InvalidRecord):
            codec.decode(json.dumps(document).encode())
