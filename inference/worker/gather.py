"""How long the next batch keeps gathering while the current one is scored.

The loop hands a batch to the ranker and at once starts polling the next. While the
ranker works, the next batch grows with what arrives: waiting costs nothing then, and
a fuller batch costs less per request. Gathering until the ranker is free, though,
leaves the ranker idle while that batch is then prepared (features, recall: about as
long as scoring itself), and the worker's CPU idle while Triton scores.

With ``prepare_ahead`` the next batch stops gathering that long before the ranker is
expected to be free, so that it is prepared while the current one is scored and is
ready when the ranker is. The expectations are moving averages of the last batches'
scoring and preparing times. Until both are known the batch gathers until the ranker
is free, as it does without ``prepare_ahead``.

The loop's thread writes, the poll's thread reads; each field is one store.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Weight of the newest batch in the moving averages: about the last ten batches count.
SMOOTHING = 0.2


class GatherClock:
    def __init__(self, prepare_ahead: bool, clock: Callable[[], float] = time.perf_counter) -> None:
        self.prepare_ahead = prepare_ahead
        self._clock = clock
        self._scoring_since: float | None = None
        self.scoring_s: float | None = None  # moving averages, None until the first batch
        self.preparing_s: float | None = None

    def handed_over(self) -> None:
        """A batch went to the ranker (set before the next poll starts)."""
        self._scoring_since = self._clock()

    def scored(self) -> None:
        """The batch in hand is scored, or failed: the next one stops gathering."""
        since, self._scoring_since = self._scoring_since, None
        if since is not None:
            self.scoring_s = _averaged(self.scoring_s, self._clock() - since)

    def prepared(self, seconds: float) -> None:
        """A batch took ``seconds`` from its last request polled to its inputs built."""
        self.preparing_s = _averaged(self.preparing_s, seconds)

    def gather_left(self) -> float:
        """Seconds the next batch may still gather; 0 or less: stop now."""
        since = self._scoring_since
        if since is None:
            return 0.0
        if not self.prepare_ahead or self.scoring_s is None or self.preparing_s is None:
            return float("inf")  # until the ranker is free
        return since + self.scoring_s - self.preparing_s - self._clock()


def _averaged(average: float | None, sample: float) -> float:
    return sample if average is None else average + SMOOTHING * (sample - average)
