"""feature_repo/ has Feast's canonical shape, and its views are the ones of schemas.views."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from feast import Entity, FeatureView, PushSource
from feast.types import Array, Float64, Int64, String

from schemas.views import ENTITIES, VIEWS, FeatureKind

REPO = Path(__file__).resolve().parents[2] / "feature_repo"
KIND_OF = {
    Int64: FeatureKind.INT64,
    Float64: FeatureKind.DOUBLE,
    String: FeatureKind.STRING,
    Array(Int64): FeatureKind.INT64_LIST,
    Array(Float64): FeatureKind.DOUBLE_LIST,
    Array(String): FeatureKind.STRING_LIST,
}


@pytest.fixture(scope="module")
def definitions() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "streamrec_feature_definitions", REPO / "definitions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def objects(module: ModuleType, kind: type[Any]) -> dict[str, Any]:
    return {obj.name: obj for obj in vars(module).values() if isinstance(obj, kind)}


def test_only_definitions_py_for_feast_apply_to_import() -> None:
    python_files = sorted(p.name for p in REPO.rglob("*.py") if "__pycache__" not in p.parts)
    assert python_files == ["definitions.py"]
    assert (REPO / "feature_store.yaml").is_file()


def test_placeholders_not_values_in_feature_store_yaml() -> None:
    text = (REPO / "feature_store.yaml").read_text()
    assert "${STREAMREC_FEAST_REGISTRY}" in text
    assert "${STREAMREC_FEAST_REDIS}" in text
    assert "entity_key_serialization_version: 3" in text


def test_entities(definitions: ModuleType) -> None:
    entities = objects(definitions, Entity)
    assert {name: e.join_key for name, e in entities.items()} == {
        "user": "user_id",
        "item": "item_id",
        "category": "category_id",
    }
    assert {e.name: e.join_key for e in ENTITIES} == {n: e.join_key for n, e in entities.items()}


def test_views_are_built_from_schemas_views(definitions: ModuleType) -> None:
    views = objects(definitions, FeatureView)
    assert sorted(views) == sorted(VIEWS)
    for name, view in views.items():
        spec = VIEWS[name]
        assert view.join_keys == [spec.join_key]
        assert view.online
        features = [(f.name, KIND_OF[f.dtype]) for f in view.features]
        assert features == [(f.name, f.kind) for f in spec.features]
        assert isinstance(view.stream_source, PushSource)
        assert view.stream_source.batch_source is not None
        assert view.ttl == spec.ttl and view.ttl.total_seconds() > 0
        assert view.description == spec.description
