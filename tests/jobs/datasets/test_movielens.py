from __future__ import annotations

from pathlib import Path

from jobs.datasets import RowAudit, read_dataset
from jobs.datasets.movielens import GENRES, UNKNOWN_GENRE_ID, genre_category, rating_behavior
from tests.support import requirements


def test_adapter_rules() -> None:
    assert rating_behavior(5.0) == "fav"
    assert rating_behavior(4.0) == "pv"
    assert rating_behavior(3.5) is None
    assert genre_category("Comedy|Romance") == GENRES.index("Comedy") + 1
    assert genre_category("Space Opera") == UNKNOWN_GENRE_ID


def test_small_folder(tmp_path: Path) -> None:
    (tmp_path / "movies.csv").write_text(
        'movieId,title,genres\n1,Toy Story (1995),Adventure|Animation\n2,"Heat, The",Action\n'
    )
    (tmp_path / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n1,1,4.0,964982703\n1,2,2.0,964982704\n"
        "2,2,5.0,964982705\n2,9,4.5,964982706\n3,1,four,964982707\n"
    )
    audit = RowAudit()
    events = list(read_dataset("movielens", tmp_path, audit))
    assert [(e.user_id, e.item_id, e.behavior, e.category_id) for e in events] == [
        (1, 1, "pv", GENRES.index("Adventure") + 1),
        (2, 2, "fav", GENRES.index("Action") + 1),
        (2, 9, "pv", UNKNOWN_GENRE_ID),
    ]
    assert events[0].ts == 964982703000
    assert (audit.rows, audit.filtered, audit.bad_rows) == (5, 1, 1)


def test_reads_the_real_ratings() -> None:
    audit = RowAudit()
    events = list(read_dataset("movielens", requirements.dataset("movielens"), audit))
    assert audit.rows == 100_836
    assert audit.bad_rows == 0
    assert len(events) + audit.filtered == audit.rows
