"""A model repository published on disk, shared by the serving unit tests (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.serving import repository
from tests.inference.serving.artifacts import write_serving_artifacts


@pytest.fixture(scope="session")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with every model's version 1 of a small random ranker."""
    root = tmp_path_factory.mktemp("published")
    repository.publish(write_serving_artifacts(root / "artifacts"), root / "repo")
    return root / "repo"
