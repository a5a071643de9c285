"""Errors of the feature job's own tooling (jars, submission); the message says what to do."""


class FeatureJobError(RuntimeError):
    """Root of the feature job's errors."""


class DependencyError(FeatureJobError):
    """A jar could not be fetched or built (Maven missing, offline, a failed build)."""


class SubmissionError(FeatureJobError):
    """``flink run`` failed, timed out or printed no job id."""
