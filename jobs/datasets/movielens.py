"""MovieLens (``ratings.csv`` + ``movies.csv``) as behaviour events.

The adapter, so the pipeline is shown not to be tied to one shop:

* a rating of at least ``positive_threshold`` (default 4.0) becomes a ``pv``,
  the click-like positive the click-sequence features are built from; lower
  ratings are skipped and counted as *filtered*, not as bad rows;
* a rating of 5.0 becomes ``fav`` instead (an explicit "loved it");
* the category is the movie's first genre, numbered by its position in
  :data:`GENRES` (1-based; ``(no genres listed)`` and unknown genres map to the
  last id), so ids are stable across runs and machines;
* ``timestamp`` (Unix seconds) becomes milliseconds; ``userId``/``movieId`` are kept.

Rows come in file order (by user, then movie), not by time; replay sorts them
with ``--sort`` when pacing by event time matters.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from jobs.datasets.audit import RowAudit
from jobs.datasets.validate import to_event
from schemas.records import BehaviorEvent

GENRES = (
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary",
    "Drama", "Fantasy", "Film-Noir", "Horror", "IMAX", "Musical", "Mystery", "Romance",
    "Sci-Fi", "Thriller", "War", "Western", "(no genres listed)",
)  # fmt: skip
_GENRE_IDS = {name: index for index, name in enumerate(GENRES, start=1)}
UNKNOWN_GENRE_ID = len(GENRES)


def genre_category(genres: str) -> int:
    """Category id of a ``|``-separated genre list: its first genre's position."""
    return _GENRE_IDS.get(genres.split("|", 1)[0], UNKNOWN_GENRE_ID)


def load_categories(movies_csv: Path) -> dict[int, int]:
    with movies_csv.open(encoding="utf-8", newline="") as handle:
        return {
            int(row["movieId"]): genre_category(row["genres"]) for row in csv.DictReader(handle)
        }


def rating_behavior(rating: float, positive_threshold: float = 4.0) -> str | None:
    if rating >= 5.0:
        return "fav"
    return "pv" if rating >= positive_threshold else None


def read_movielens(
    folder: Path, audit: RowAudit, positive_threshold: float = 4.0
) -> Iterator[BehaviorEvent]:
    categories = load_categories(folder / "movies.csv")
    with (folder / "ratings.csv").open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle)
        next(rows, None)  # header
        for line_no, row in enumerate(rows, start=2):
            audit.rows += 1
            parsed = _parse_rating(row, categories, positive_threshold)
            if parsed is None:
                audit.filtered += 1
            elif isinstance(parsed, str):
                audit.reject(line_no, parsed, ",".join(row))
            else:
                yield parsed


def _parse_rating(
    row: list[str], categories: dict[int, int], positive_threshold: float
) -> BehaviorEvent | str | None:
    if len(row) != 4:
        return f"expected 4 columns, got {len(row)}"
    try:
        user, movie, rating, seconds = int(row[0]), int(row[1]), float(row[2]), int(row[3])
    except ValueError:
        return "non-numeric field"
    behavior = rating_behavior(rating, positive_threshold)
    if behavior is None:
        return None
    category = categories.get(movie, UNKNOWN_GENRE_ID)
    return to_event(user, movie, category, behavior, seconds * 1000)
