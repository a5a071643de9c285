"""Errors of the inference worker: one root, narrow subclasses that say which part failed."""

from __future__ import annotations


class WorkerError(Exception):
    """Root of every error the worker raises."""


class SettingsError(WorkerError):
    """A setting is missing or out of range."""


class ArtifactsError(WorkerError):
    """The model directory lacks a file the worker needs, or a file is inconsistent."""


class RankerUnavailable(WorkerError):
    """The ranker (Triton) could not be reached or refused the request."""


class VersionNotReady(RankerUnavailable):
    """Triton has no ready copy of the version asked for by name (not loaded yet, or
    being unloaded): the model itself has not failed."""


class RankerTimeout(RankerUnavailable):
    """The ranker did not answer within the time budget."""


class FeatureStoreUnavailable(WorkerError):
    """Redis could not be reached."""


class DeliveryStuck(WorkerError):
    """A Kafka client call outlived every timeout it was given (a librdkafka bug: a
    transactional call can wait forever for a coordinator that moved). The blocked
    thread cannot be freed, so the process must exit; its restart resumes."""
