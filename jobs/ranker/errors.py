"""Errors of the ranker training job."""

from __future__ import annotations


class RankerError(Exception):
    """Root of the training job's errors."""


class TrainingDataError(RankerError):
    """The dataset cannot give a usable train/held-out split."""


class EmptySplitError(TrainingDataError):
    """The time cut leaves no train or no held-out events.

    It carries the counts so the job can add what the data spans and which
    setting to change (the core does not know the flags).
    """

    def __init__(self, cutoff_ms: int, train_events: int, held_out_events: int) -> None:
        super().__init__(
            f"split at {cutoff_ms} leaves {train_events} train and "
            f"{held_out_events} held-out events"
        )
        self.cutoff_ms = cutoff_ms
        self.train_events = train_events
        self.held_out_events = held_out_events
