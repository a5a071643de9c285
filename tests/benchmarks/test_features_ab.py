"""The side-by-side benchmark's pure parts: its arguments and its run order."""

from __future__ import annotations

import pytest

from tests.benchmarks.features_ab import parse_revs, round_order


def test_revisions_are_label_rev_pairs_in_order() -> None:
    assert parse_revs(["before=HEAD~1", "after=."]) == {"before": "HEAD~1", "after": "."}
    assert list(parse_revs(["b=x", "a=y"])) == ["b", "a"]


@pytest.mark.parametrize(
    "given",
    [["before=HEAD"], ["before", "after=."], ["=HEAD", "a=."], ["a=x", "a=y"], ["a=", "b=."]],
)
def test_malformed_revisions_are_refused(given: list[str]) -> None:
    with pytest.raises(ValueError):
        parse_revs(given)


def test_every_other_round_runs_in_reverse() -> None:
    assert round_order(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert round_order(["a", "b", "c"], 1) == ["c", "b", "a"]
    assert round_order(["a", "b"], 2) == ["a", "b"]
