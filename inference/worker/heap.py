"""Keep Python's cyclic garbage collector off the request path.

The worker allocates many short-lived containers per request (rows, candidates,
answers) on top of a large long-lived heap (the vocabulary, the recall index's
tables, the shared-rows cache). With Python's default thresholds the young
generation is collected every 700 net allocations, and every so often a full
collection walks the whole heap while holding the GIL: every stage of every
batch in flight waits. Measured side by side on one stack (``make bench-sla``'s
setup, 360 requests/s, Poisson): p99 142-374 ms with the defaults, 36-59 ms with
the heap frozen after start and the young threshold at 50,000.

``settle`` runs once, after everything long-lived is built: a last full
collection, then :func:`gc.freeze` moves every surviving object to the permanent
generation, which later collections never scan. The collector stays on (cycles
are still freed); only its rhythm changes. ``STREAMREC_WORKER_GC_YOUNG_THRESHOLD``
sets the young threshold; 0 leaves Python's defaults and freezes nothing.

The rhythm only stays rare if the request path makes no reference cycles: each
cycle outlives its batch until a collection, and the collection that frees them
pays for all of them at once. A closure over each batch's reads once did (16-83 ms
per collection, every 13 s at the demo's 70 requests/s); the feature reads' test
checks that a batch leaves no cyclic garbage.
"""

from __future__ import annotations

import gc

# Collections of generation 0 between those of generation 1, and of 1 between 2 (Python's
# defaults are 10 and 10); with a larger young threshold fewer, larger sweeps suffice.
OLDER_GENERATION_THRESHOLDS = (50, 1000)


def settle(young_threshold: int) -> tuple[int, int, int]:
    """Freeze the heap built so far and collect the young generation after
    ``young_threshold`` net allocations; 0 leaves the collector as Python set it.
    Returns the thresholds now in force."""
    if young_threshold > 0:
        gc.collect()
        gc.freeze()
        gc.set_threshold(young_threshold, *OLDER_GENERATION_THRESHOLDS)
    first, second, third = gc.get_threshold()
    return first, second, third
