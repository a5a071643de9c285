"""``feast apply`` works on the repository and registers exactly the views the writer knows."""

from __future__ import annotations

import pytest

from schemas.views import VIEWS
from tests.feature_repo.applied import AppliedRepo

pytestmark = pytest.mark.integration


def test_apply_registers_entities_views_and_push_sources(feast_repo: AppliedRepo) -> None:
    store = feast_repo.store
    assert {e.name for e in store.list_entities()} == {"user", "item", "category"}
    views = {v.name: v for v in store.list_feature_views()}
    assert sorted(views) == sorted(VIEWS)
    for name, view in views.items():
        assert [f.name for f in view.features] == list(VIEWS[name].feature_names)
    pushes = {s.name for s in store.list_data_sources() if type(s).__name__ == "PushSource"}
    assert pushes == {f"{name}_push" for name in VIEWS}


def test_apply_writes_nothing_into_the_tracked_tree(feast_repo: AppliedRepo) -> None:
    leftovers = {p.name for p in feast_repo.path.iterdir()} - {
        "feature_store.yaml", "definitions.py", ".feastignore", "__pycache__",
    }  # fmt: skip
    assert leftovers == set()
