"""Errors of the ranker training job."""

from __future__ import annotations


class RankerError(Exception):
    """Root of the training job's errors."""


class TrainingDataError(RankerError):
    """The dataset cannot give a usable train/held-out split."""
