from tests.feature_repo.applied import feast_cluster_repo, feast_repo

__all__ = ["feast_cluster_repo", "feast_repo"]
