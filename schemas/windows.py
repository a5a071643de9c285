"""The feature windows every stage agrees on: one definition, imported, never restated.

The feature job computes HOP windows of ``WINDOW_MS`` sliding every
``SLIDE_MS`` (aligned to the epoch, UTC) and keeps a user's last
``SEQUENCE_LIMIT`` events; the fresh view keeps the events of the last
``HORIZON_MS`` before the user's newest one. The writer cuts, the ranker trains
on, the worker pads to and the drift job watches exactly these. The jobs may be
run with other values (flags), but then the ranker must be retrained on them:
the model's sequence input is ``SEQUENCE_LIMIT`` long.
"""

from __future__ import annotations

MINUTE_MS = 60_000

WINDOW_MS = 30 * MINUTE_MS
SLIDE_MS = 5 * MINUTE_MS
# The fresh view's horizon: a "session" of recent clicks.
HORIZON_MS = 30 * MINUTE_MS
# Events kept per user sequence (window and fresh view), and the ranker's sequence input.
SEQUENCE_LIMIT = 50
# Trending items kept per category and window.
TOP_ITEMS = 10
