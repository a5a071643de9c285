from tests.feature_repo.applied import feast_repo

__all__ = ["feast_repo"]
