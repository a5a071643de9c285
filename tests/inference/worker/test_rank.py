"""Ranking a prepared batch with a scorer that answers, times out or is down (no services)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from inference.worker.errors import RankerTimeout, RankerUnavailable, VersionNotReady
from inference.worker.features import ItemFeatures, UserFeatures
from inference.worker.inputs import UserInput
from inference.worker.metrics import WorkerMetrics
from inference.worker.prepare import PreparedBatch, PreparedRequest
from inference.worker.rank import FALLBACK_VERSION, Ranker, recommendations
from inference.worker.recall import Candidate
from inference.worker.routing import RoutingView
from inference.worker.scoring import Breaker, Inputs
from schemas.codec import recommendation_codec
from schemas.ranking import CAND_ITEMS
from schemas.records import Recommendation, RecRequest
from schemas.routing import Routing, Variant


class FakeScorer:
    """Scores = candidate index / 100; or raises ``error``. Records the batch sizes seen."""

    def __init__(self, error: Exception | dict[int, Exception] | None = None) -> None:
        self.error = error
        self.calls: list[int] = []
        self.versions: list[int | None] = []

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        self.calls.append(len(inputs[CAND_ITEMS]))
        self.versions.append(version)
        if isinstance(self.error, dict):  # version -> the error that version raises
            if version is not None and (failure := self.error.get(version)) is not None:
                raise failure
        elif self.error is not None:
            raise self.error
        return inputs[CAND_ITEMS].astype(np.float32) / 100, f"ranker:{version or 3}"

    async def close(self) -> None:
        return None


def batch(users: int, out_of_stock: set[int] | None = None) -> PreparedBatch:
    requests = []
    for u in range(users):
        items = [10 + u, 20 + u, 30 + u]
        model_input = UserInput(
            seq_items=np.zeros(0, np.int32), seq_cats=np.zeros(0, np.int32),
            user_dense=[0.0] * 4, cand_items=np.array(items, np.int32),
            cand_cats=np.zeros(3, np.int32), cand_dense=np.zeros((3, 24), np.float32),
        )  # fmt: skip
        request = RecRequest(request_id=f"r{u}", user_id=u + 1, ts=1_700_000_000_000, k=2)
        user = UserFeatures(u + 1, excluded=frozenset({30 + u}), features_at=5)
        cands = [Candidate(i, "embedding") for i in items]
        requests.append(PreparedRequest(request, user, cands, model_input, [0, 0, 0]))
    trends = {20: ItemFeatures([0.0] * 5, 0, 100.0)}
    return PreparedBatch(requests, trends, out_of_stock or set())


def rank(
    scorer: FakeScorer, prepared: PreparedBatch, users_per_request: int = 2
) -> list[Recommendation]:
    ranker = Ranker(scorer, Breaker(60), users_per_request, (10,), WorkerMetrics())
    ranked = asyncio.run(ranker.rank(prepared))
    return list(recommendations(prepared, ranked, max_per_category=3, now_ms=1_700_000_000_001))


def test_scores_in_chunks_and_post_processes() -> None:
    scorer = FakeScorer()
    recs = rank(scorer, batch(5, out_of_stock={21}))
    assert scorer.calls == [2, 2, 1]
    first, second = recs[0], recs[1]
    assert [i.item_id for i in first.items] == [20, 10]  # 30 just viewed: excluded
    assert [i.item_id for i in second.items] == [11]  # 21 out of stock, 31 excluded
    assert first.model_version == "ranker:3" and not first.degraded and first.features_at == 5


@pytest.mark.parametrize(
    ("error", "reason"),
    [(RankerTimeout("slow"), "triton_timeout"), (RankerUnavailable("down"), "triton_unavailable")],
)
def test_ranker_failure_gives_flagged_fallbacks_and_opens_the_breaker(
    error: Exception, reason: str
) -> None:
    scorer = FakeScorer(error)
    recs = rank(scorer, batch(4))
    assert scorer.calls == [2]  # the first failure opens the breaker: no second call waits
    # The chunk that called gets the failure's own reason; the next finds the breaker open.
    assert [rec.degraded_reasons for rec in recs] == [[reason]] * 2 + [["triton_unavailable"]] * 2
    for rec in recs:
        assert rec.degraded and rec.model_version == FALLBACK_VERSION and rec.items
    # Fallback order: the trending item first, then the popular one.
    assert [i.item_id for i in recs[0].items] == [20, 10]


def test_late_requests_skip_the_ranker_and_are_answered_flagged() -> None:
    scorer = FakeScorer()
    prepared = batch(4)
    ranker = Ranker(scorer, Breaker(60), 2, (10,), WorkerMetrics())
    ranked = asyncio.run(ranker.rank(prepared, late=frozenset({1, 2})))
    recs = recommendations(prepared, ranked, max_per_category=3, now_ms=1_700_000_000_001)
    assert scorer.calls == [2]  # users 0 and 3, in one chunk
    assert [r.request_id for r in recs] == ["r0", "r1", "r2", "r3"]  # order kept
    late = ["deadline_exceeded"]
    assert [r.degraded_reasons for r in recs] == [[], late, late, []]
    assert recs[1].model_version == FALLBACK_VERSION and recs[1].items  # answered, not dropped
    assert recs[0].model_version == recs[3].model_version == "ranker:3"


class ScriptedScorer(FakeScorer):
    """Answers each call with ``make(inputs)``: scores a broken model could return."""

    def __init__(self, make: Callable[[Inputs], npt.NDArray[np.float32]]) -> None:
        super().__init__()
        self.make = make

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        self.calls.append(len(inputs[CAND_ITEMS]))
        return self.make(inputs), "ranker:3"


def with_nan_for_first_user(inputs: Inputs) -> npt.NDArray[np.float32]:
    scores = inputs[CAND_ITEMS].astype(np.float32) / 100
    scores[0, 1] = np.nan
    return scores


@pytest.mark.parametrize(
    "make",
    [
        lambda inputs: np.zeros((1, 3), np.float32),  # fewer users than asked for
        lambda inputs: np.zeros((2, 2), np.float32),  # fewer candidates than sent
        lambda inputs: np.zeros((6,), np.float32),  # flat
        lambda inputs: np.zeros((2, 3), np.int64),  # not scores at all
    ],
)
def test_a_wrongly_shaped_output_gives_flagged_fallbacks_not_a_crash(
    make: Callable[[Inputs], npt.NDArray[np.float32]],
) -> None:
    scorer = ScriptedScorer(make)
    recs = rank(scorer, batch(4))
    assert scorer.calls == [2]  # the breaker opens: a broken model is kept out for a while
    assert [r.degraded_reasons for r in recs] == [["ranker_bad_output"]] * 2 + [
        ["triton_unavailable"]
    ] * 2
    assert all(r.model_version == FALLBACK_VERSION and r.items for r in recs)


def test_a_non_finite_score_gives_that_user_the_fallback_and_keeps_the_others() -> None:
    scorer = ScriptedScorer(with_nan_for_first_user)
    recs = rank(scorer, batch(2))
    assert recs[0].degraded_reasons == ["ranker_bad_output"]
    assert recs[0].model_version == FALLBACK_VERSION
    assert not recs[1].degraded and recs[1].model_version == "ranker:3"
    # No NaN became a null score that readers of the topic could not decode.
    for rec in recs:
        encoded = json.loads(recommendation_codec().encode(rec))
        assert all(isinstance(item["score"], float) for item in encoded["items"])


def split(shares: dict[str, tuple[int, float]]) -> RoutingView:
    variants = [Variant(name, version, share) for name, (version, share) in shares.items()]
    return RoutingView(Routing("ranker", variants, revision=1, updated_at=1_700_000_000_000))


def test_each_variant_is_scored_by_its_own_version_and_named_in_the_answer() -> None:
    scorer = FakeScorer()
    prepared = batch(40)
    routing = split({"canary": (5, 50.0), "champion": (4, 50.0)})
    ranker = Ranker(scorer, Breaker(60), 8, (10,), WorkerMetrics())
    ranked = asyncio.run(ranker.rank(prepared, routing=routing))
    recs = recommendations(prepared, ranked, max_per_category=3, now_ms=1_700_000_000_001)
    assert set(scorer.versions) == {4, 5}  # never the unversioned default
    for rec in recs:
        expected = routing.variant(rec.user_id)
        assert expected is not None and rec.variant == expected.name
        assert rec.model_version == f"ranker:{expected.version}"
    assert {rec.variant for rec in recs} == {"canary", "champion"}
    assert json.loads(recommendation_codec().encode(recs[0]))["variant"] == recs[0].variant


def test_a_failing_canary_leaves_the_champions_users_on_the_ranker() -> None:
    scorer = FakeScorer({5: RankerUnavailable("canary down")})
    prepared = batch(40)
    routing = split({"canary": (5, 50.0), "champion": (4, 50.0)})
    ranker = Ranker(scorer, Breaker(60), 4, (10,), WorkerMetrics())
    for _ in range(2):  # the second batch finds the canary's breaker open, not the champion's
        ranked = asyncio.run(ranker.rank(prepared, routing=routing))
        recs = recommendations(prepared, ranked, max_per_category=3, now_ms=1_700_000_000_001)
        for rec in recs:
            assert rec.degraded == (rec.variant == "canary"), rec
        assert not any(rec.degraded for rec in recs if rec.variant == "champion")


def test_a_version_triton_has_not_ready_is_answered_by_the_default_one_and_flagged() -> None:
    not_ready = VersionNotReady("Request for unknown model: 'ranker' version 5 is not found")
    scorer = FakeScorer({5: not_ready})
    prepared = batch(40)
    routing = split({"canary": (5, 50.0), "champion": (4, 50.0)})
    metrics = WorkerMetrics()
    ranker = Ranker(scorer, Breaker(60), 40, (10,), metrics)
    for _ in range(2):
        ranked = asyncio.run(ranker.rank(prepared, routing=routing))
        recs = recommendations(prepared, ranked, max_per_category=3, now_ms=1_700_000_000_001)
        canary = [r for r in recs if r.variant == "canary"]
        assert canary and all(not r.degraded and r.rerouted_from == 5 for r in canary)
        assert {r.model_version for r in canary} == {"ranker:3"}  # Triton's default answered
        champion = [r for r in recs if r.variant == "champion"]
        assert all(r.rerouted_from is None and r.model_version == "ranker:4" for r in champion)
    # The second batch went to the default version directly, without asking for 5 again.
    assert scorer.versions.count(5) == 1 and scorer.versions.count(None) == 2
    assert metrics.rerouted._value.get() == 2 * len(canary)
