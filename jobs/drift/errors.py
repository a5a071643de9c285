"""The drift job's errors: one root, narrow subclasses that say what to fix."""

from __future__ import annotations


class DriftError(Exception):
    """Root of every error the drift job raises on purpose."""


class SettingsError(DriftError):
    """A setting from the environment or a flag is out of range or unparsable."""


class ReferenceUnavailable(DriftError):
    """The reference file is missing, unreadable or lacks the drift columns."""
