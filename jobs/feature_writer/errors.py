"""Errors of the feature writer: one root, narrow subclasses with context."""

from __future__ import annotations


class FeatureWriterError(Exception):
    """Root of every error this package raises."""


class SettingsError(FeatureWriterError):
    """A setting (environment variable or flag) has an unusable value."""


class WriterStopped(FeatureWriterError):
    """A stop was requested while a batch still waited for Redis: it stays uncommitted."""
