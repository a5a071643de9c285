"""The worker's loop with in-memory requests, features and output (no Kafka, Redis or Triton).

What the loop itself promises (``inference/worker/worker.py``): batches are
delivered, and their offsets handed back, in order, each request once; in the
default mode the next batch is polled while the current one is scored; in
exactly-once mode one batch at a time; the stream and sink are closed at the end.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest

from inference.worker import worker as worker_module
from inference.worker.arrival import CREATE_TIME, LOG_APPEND_TIME
from inference.worker.artifacts import ModelArtifacts
from inference.worker.deadline import late_positions
from inference.worker.errors import RankerUnavailable
from inference.worker.features import UserFeatures
from inference.worker.gather import GatherClock
from inference.worker.inputs import UserInput
from inference.worker.kafka_io import DeliveryError, Polled
from inference.worker.metrics import STAGES, WorkerMetrics
from inference.worker.prepare import PreparedBatch, PreparedRequest
from inference.worker.recall import Candidate
from inference.worker.routing import RoutingWatcher
from inference.worker.scoring import Inputs
from inference.worker.settings import WorkerSettings
from inference.worker.stuck import CallClock
from inference.worker.warm_up import WARM_UP_USER
from inference.worker.worker import Stats, Worker
from schemas.codec import wall_clock_ms
from schemas.ranking import CAND_ITEMS, FIRST_ID_INDEX, Vocabulary
from schemas.records import Recommendation, RecRequest
from schemas.routing import Routing, Variant, encode, variant_of


class MemoryStream:
    """Hands out scripted batches; sets ``stop`` once they are all out."""

    def __init__(
        self, batches: list[list[RecRequest]], stop: asyncio.Event, message: Any = None
    ) -> None:
        self.batches = batches
        self.message = message  # what each record was consumed as (None: no timestamp)
        self.stop = stop
        self.polled_while_scoring: list[bool] = []
        self.overlapped = threading.Event()  # set by the first poll while a batch scores
        self.closed = False
        self._offset = 0

    def poll(self, _max: int, _window_s: float, gather_left: Callable[[], float]) -> Polled:
        gathering = gather_left() > 0
        self.polled_while_scoring.append(gathering)
        if gathering:
            self.overlapped.set()
        if not self.batches:
            self.stop.set()
            return Polled()
        polled = Polled(received_ms=wall_clock_ms())
        for request in self.batches.pop(0):
            polled.records.append((self.message, request))
            self._offset += 1
        polled.offsets[("requests", 0)] = self._offset
        return polled

    def close(self) -> None:
        self.closed = True


class MemorySink:
    """Records each delivery, after ``delays_s[n]`` seconds for the n-th (none past the list)."""

    def __init__(self, delays_s: Sequence[float] = ()) -> None:
        self.delivered: list[tuple[list[str], dict[tuple[str, int], int]]] = []
        self.recommendations: list[Recommendation] = []
        self.closed = False
        self.clock = CallClock()  # no Kafka call ever runs: never overdue
        self.delays_s = list(delays_s)
        self.calls = 0

    def deliver(
        self, recs: Sequence[Recommendation], polled: Polled, _stream: Any
    ) -> dict[str, float]:
        self.calls += 1
        if self.delays_s:
            time.sleep(self.delays_s.pop(0))
        self.delivered.append(([r.request_id for r in recs], dict(polled.offsets)))
        self.recommendations.extend(recs)
        return {"produce": 0.0005, "commit": 0.00001}

    def close(self) -> None:
        self.closed = True


class SlowScorer:
    """Scores = candidate id / 100, after a pause long enough for the next poll to happen."""

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        await asyncio.sleep(0.3)  # a loaded box may start the poll thread late
        return inputs[CAND_ITEMS].astype(np.float32) / 100, "ranker:1"

    async def close(self) -> None:
        return None


class QuickScorer(SlowScorer):
    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        return inputs[CAND_ITEMS].astype(np.float32) / 100, "ranker:1"


class MemoryPreparer:
    """Every request gets three candidates and no features."""

    # Items 10, 20 and 30 of category 7 (indexes from FIRST_ID_INDEX); 10 the most popular.
    artifacts = ModelArtifacts(
        Vocabulary.build([10, 20, 30], [7]),
        np.zeros((FIRST_ID_INDEX + 3, 2), np.float32),
        np.array([0] * FIRST_ID_INDEX + [7, 7, 7], np.int64),
        (10,),
    )

    def __init__(self) -> None:
        self.prepared: list[list[RecRequest]] = []

    def twin(self, _metrics: WorkerMetrics) -> MemoryPreparer:
        return self  # what it prepared is recorded in one list

    def prepare(self, requests: list[RecRequest]) -> PreparedBatch:
        self.prepared.append(list(requests))
        prepared = []
        for request in requests:
            items = [10, 20, 30]
            model_input = UserInput(
                seq_items=np.zeros(0, np.int32), seq_cats=np.zeros(0, np.int32),
                user_dense=[0.0] * 4, cand_items=np.array(items, np.int32),
                cand_cats=np.zeros(3, np.int32), cand_dense=np.zeros((3, 24), np.float32),
            )  # fmt: skip
            user = UserFeatures(request.user_id)
            cands = [Candidate(i, "embedding") for i in items]
            prepared.append(PreparedRequest(request, user, cands, model_input, [0, 0, 0]))
        # The stages BatchPreparer times (tests/inference/worker/test_metrics.py).
        return PreparedBatch(prepared, {}, set(), {"features": 0.001, "recall": 0.002})


def memory_worker(
    batches: list[list[RecRequest]],
    exactly_once: bool,
    message: Any = None,
    **settings: Any,
) -> tuple[Worker, Any]:
    stop = asyncio.Event()
    settings.setdefault("warm_up_batches", 0)  # the tests below of the warm-up set it
    worker = Worker.__new__(Worker)  # the in-memory parts replace Kafka, Redis and Triton
    worker.settings = WorkerSettings(exactly_once=exactly_once, transactional_id="t", **settings)
    worker.metrics = WorkerMetrics()
    worker.stats = Stats()
    worker.preparer = MemoryPreparer()  # type: ignore[assignment]
    worker.stream = MemoryStream(batches, stop, message)  # type: ignore[assignment]
    worker.sink = MemorySink()  # type: ignore[assignment]
    worker.popular = (10,)
    worker.scorer = None
    worker.routing = None
    worker.index_reload = None
    worker._gather = GatherClock(worker.settings.prepare_ahead)
    worker._instance = None  # the transactional id is given ("t"): no slot claimed
    return worker, stop


def requests(prefix: str, n: int) -> list[RecRequest]:
    return [RecRequest(f"{prefix}{i}", i + 1, 1_700_000_000_000, k=2) for i in range(n)]


@pytest.mark.parametrize(
    ("exactly_once", "overlap"), [(False, False), (False, True), (True, False), (True, True)]
)
def test_batches_are_delivered_in_order_each_request_once(
    monkeypatch: pytest.MonkeyPatch, exactly_once: bool, overlap: bool
) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: QuickScorer())
    batches = [requests("a", 3), requests("b", 2), requests("c", 4)]
    worker, stop = memory_worker([list(b) for b in batches], exactly_once, overlap_delivery=overlap)
    # The first delivery is the slowest: a later batch overlapping it must still wait.
    worker.sink = MemorySink(delays_s=[0.3, 0.05])  # type: ignore[assignment]
    asyncio.run(worker.run(stop))
    sink, stream = worker.sink, worker.stream
    assert isinstance(sink, MemorySink) and isinstance(stream, MemoryStream)
    assert [ids for ids, _ in sink.delivered] == [[r.request_id for r in b] for b in batches]
    assert [offsets for _, offsets in sink.delivered] == [
        {("requests", 0): 3},
        {("requests", 0): 5},
        {("requests", 0): 9},
    ]
    assert worker.stats.requests == 9 and worker.stats.batches == 3
    assert sink.closed and stream.closed


class OverlapWaitingScorer(SlowScorer):
    """Scores once the stream was polled while a batch scored (or after 10 s): no
    fixed pause for a loaded box to outlast."""

    def __init__(self, overlapped: threading.Event) -> None:
        self.overlapped = overlapped

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        await asyncio.to_thread(self.overlapped.wait, 10.0)
        return inputs[CAND_ITEMS].astype(np.float32) / 100, "ranker:1"


def test_the_next_batch_is_polled_while_the_current_one_is_scored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next poll's thread starts as the batch is handed over, and may ask whether a
    batch is in hand before the batch's task has run at all (a loaded box): it must
    already be told yes. The task is held up at its start here to make that order
    certain."""
    worker, stop = memory_worker([requests("a", 3), requests("b", 3)], exactly_once=False)
    assert isinstance(worker.stream, MemoryStream)
    overlapped = worker.stream.overlapped
    monkeypatch.setattr(worker_module, "build_scorer", lambda _s: OverlapWaitingScorer(overlapped))

    def held_up(*args: Any) -> frozenset[int]:
        time.sleep(0.3)  # blocks the event loop, as a busy box can, while the poll runs
        return late_positions(*args)

    monkeypatch.setattr(worker_module, "late_positions", held_up)
    asyncio.run(worker.run(stop))
    assert worker.stream.polled_while_scoring[:2] == [False, True]


def test_exactly_once_scores_one_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: SlowScorer())
    worker, stop = memory_worker([requests("a", 3), requests("b", 3)], exactly_once=True)
    asyncio.run(worker.run(stop))
    assert isinstance(worker.stream, MemoryStream)
    assert not any(worker.stream.polled_while_scoring)


class DeliveryWatchingScorer(QuickScorer):
    """Notes, for every call, whether a delivery was running in the sink meanwhile."""

    def __init__(self, sink: MemorySink) -> None:
        self.sink = sink
        self.while_delivering: list[bool] = []

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        self.while_delivering.append(self.sink.calls > len(self.sink.delivered))
        return await super().score(inputs, version)


@pytest.mark.parametrize("overlap", [True, False])
def test_with_overlap_the_next_batch_is_scored_while_the_last_is_delivered(
    monkeypatch: pytest.MonkeyPatch, overlap: bool
) -> None:
    worker, stop = memory_worker(
        [requests("a", 3), requests("b", 3)], exactly_once=False, overlap_delivery=overlap
    )
    sink = MemorySink(delays_s=[1.0])  # the first delivery is slow
    worker.sink = sink  # type: ignore[assignment]
    scorer = DeliveryWatchingScorer(sink)
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: scorer)
    asyncio.run(worker.run(stop))
    assert scorer.while_delivering == [False, overlap]
    assert [ids for ids, _ in sink.delivered] == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]


class FailingSink(MemorySink):
    def deliver(
        self, recs: Sequence[Recommendation], polled: Polled, stream: Any
    ) -> dict[str, float]:
        if not self.calls:
            self.calls += 1
            time.sleep(0.3)  # the next batch is scored meanwhile
            raise DeliveryError("1 undelivered, failures: ['broker gone']")
        return super().deliver(recs, polled, stream)


def test_a_failed_delivery_stops_every_batch_behind_it_from_committing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second batch is scored while the first is delivered; the first fails, and the
    second must neither be delivered nor hand back its offsets (past the first's)."""
    worker, stop = memory_worker(
        [requests("a", 3), requests("b", 3), requests("c", 3)],
        exactly_once=False,
        overlap_delivery=True,
    )
    sink = FailingSink()
    worker.sink = sink  # type: ignore[assignment]
    scorer = CountingScorer()
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: scorer)
    with pytest.raises(DeliveryError, match="broker gone"):
        asyncio.run(worker.run(stop))
    assert scorer.calls >= 2  # the overlap happened
    assert sink.delivered == [] and sink.calls == 1
    assert sink.closed and worker.stats.requests == 0


class Consumed:
    """A consumed message appended ``age_ms`` ago (create-time timestamp by default)."""

    def __init__(self, age_ms: int, kind: int = CREATE_TIME) -> None:
        self.appended = wall_clock_ms() - age_ms
        self.kind = kind

    def timestamp(self) -> tuple[int, int]:
        return (self.kind, self.appended)


class CountingScorer(SlowScorer):
    def __init__(self) -> None:
        self.calls = 0

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        self.calls += 1
        return await super().score(inputs, version)


@pytest.mark.parametrize(("age_ms", "late"), [(5_000, True), (10, False)])
def test_requests_past_the_deadline_are_answered_by_the_fallback_flagged(
    monkeypatch: pytest.MonkeyPatch, age_ms: int, late: bool
) -> None:
    scorer = CountingScorer()
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: scorer)
    worker, stop = memory_worker(
        [requests("a", 3)], exactly_once=False, message=Consumed(age_ms), deadline_ms=1_000
    )
    asyncio.run(worker.run(stop))
    assert isinstance(worker.sink, MemorySink)
    recs = worker.sink.recommendations
    assert [r.request_id for r in recs] == ["a0", "a1", "a2"]  # every one answered
    expected = ["deadline_exceeded"] if late else []
    assert all(r.degraded_reasons == expected and r.items for r in recs)
    assert scorer.calls == (0 if late else 1)


def test_each_answer_names_its_variant_and_the_variants_are_counted_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: SlowScorer())
    worker, stop = memory_worker([requests("a", 40)], exactly_once=False)
    # Names of this test's own: counters may live in files shared by the whole test process
    # (prometheus_client's multiprocess mode, which importing the Feast SDK turns on).
    b, a = f"b{uuid.uuid4().hex[:6]}", f"a{uuid.uuid4().hex[:6]}"
    variants = [Variant(b, 2, 50.0, "streamrec-ranker/9"), Variant(a, 1, 50.0, "r/8")]
    split = Routing("ranker_python", variants, 1, 1_700_000_000_000)
    raw = encode(split)
    worker.routing = RoutingWatcher(lambda: raw, 60_000, worker._routing_changed)
    asyncio.run(worker.run(stop))
    assert isinstance(worker.sink, MemorySink)
    recs = worker.sink.recommendations
    assert {r.variant for r in recs} == {a, b}
    for rec in recs:
        variant = variant_of(split, rec.user_id)
        assert (rec.variant, rec.registry_version) == (variant.name, variant.registry_version)
    registry = worker.metrics.registry
    for name in (a, b):
        answered = registry.get_sample_value(
            "streamrec_worker_variant_answers_total", {"variant": name, "outcome": "ok"}
        )
        assert answered == sum(r.variant == name for r in recs)
    share = registry.get_sample_value(
        "streamrec_worker_routing_share",
        {"variant": b, "version": "2", "registry_version": "streamrec-ranker/9"},
    )
    assert share == 50.0


def _sample(worker: Worker, name: str, **labels: str) -> float:
    return worker.metrics.registry.get_sample_value(name, labels) or 0.0


def _counts(worker: Worker) -> dict[str, float]:
    """The observations so far (counters may be shared by the test process: compare deltas)."""
    figures = {s: _sample(worker, "streamrec_worker_stage_seconds_count", stage=s) for s in STAGES}
    for name in ("end_to_end_seconds", "request_event_lag_seconds", "variant_seconds"):
        labels = {"variant": "default"} if name == "variant_seconds" else {}
        figures[name] = _sample(worker, f"streamrec_worker_{name}_count", **labels)
        low = f"streamrec_worker_{name}_bucket"
        figures[f"{name} <= 1s"] = _sample(worker, low, le="1.0", **labels)
    year = "streamrec_worker_request_event_lag_seconds_bucket"
    figures["event lag <= 1 year"] = _sample(worker, year, le="31536000.0")
    for origin in ("log_append_time", "create_time", "poll_time"):
        figures[origin] = _sample(worker, "streamrec_worker_latency_origin_total", origin=origin)
    return figures


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in after}


def test_every_stage_is_observed_once_per_batch_and_idle_polls_are_no_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: SlowScorer())
    batches = [requests("a", 3), requests("b", 2), requests("c", 4)]
    worker, stop = memory_worker(batches, exactly_once=False)
    before = _counts(worker)
    asyncio.run(worker.run(stop))
    grew = _delta(before, _counts(worker))
    # Polls that found nothing (the last one, here) add no observation to any stage.
    assert {stage: grew[stage] for stage in STAGES} == {stage: 3 for stage in STAGES}


def test_a_replayed_request_years_old_is_timed_from_its_kafka_append(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: SlowScorer())
    replayed = [RecRequest(f"r{i}", i + 1, 1_511_539_200_000, k=2) for i in range(3)]  # 2017
    appended = Consumed(age_ms=3, kind=LOG_APPEND_TIME)
    worker, stop = memory_worker([replayed], exactly_once=False, message=appended)
    before = _counts(worker)
    asyncio.run(worker.run(stop))
    grew = _delta(before, _counts(worker))
    # Appended 3 ms before the poll and scored in 50 ms: well under a second, per variant too.
    assert grew["end_to_end_seconds"] == grew["end_to_end_seconds <= 1s"] == 3
    assert grew["variant_seconds"] == grew["variant_seconds <= 1s"] == 3
    assert grew["log_append_time"] == 3 and grew["poll_time"] == grew["create_time"] == 0
    # The event-time lag says how old the events are: over a year.
    assert grew["request_event_lag_seconds"] == 3 and grew["event lag <= 1 year"] == 0


def test_a_create_time_stamped_with_event_time_gives_way_to_the_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: SlowScorer())
    stamped = Consumed(age_ms=wall_clock_ms() - 1_511_539_200_000)  # a producer set 2017
    worker, stop = memory_worker([requests("s", 2)], exactly_once=False, message=stamped)
    before = _counts(worker)
    asyncio.run(worker.run(stop))
    grew = _delta(before, _counts(worker))
    assert grew["poll_time"] == 2 and grew["end_to_end_seconds <= 1s"] == 2


class InstantScorer(CountingScorer):
    """Counts its calls and answers at once; unavailable on the first ``failing`` calls,
    as a ranker still loading is."""

    def __init__(self, failing: int = 0) -> None:
        super().__init__()
        self.failing = failing

    async def score(
        self, inputs: Inputs, version: int | None = None
    ) -> tuple[npt.NDArray[np.float32], str]:
        self.calls += 1
        if self.calls <= self.failing:
            raise RankerUnavailable("still loading")
        return inputs[CAND_ITEMS].astype(np.float32) / 100, "ranker:1"


def test_the_warm_up_runs_first_and_leaves_no_answer_and_no_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scorer = InstantScorer()
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: scorer)
    worker, stop = memory_worker(
        [requests("a", 3), requests("b", 2)], exactly_once=False, warm_up_batches=3
    )
    before = _counts(worker)
    asyncio.run(worker.run(stop))
    assert isinstance(worker.sink, MemorySink)
    prepared = cast(MemoryPreparer, worker.preparer).prepared
    warm, real = prepared[:3], prepared[3:]
    assert [len(batch) for batch in warm] == [1, 2, 4]
    # The warm-up user, each request prompted by a click on the most popular item.
    made = [r for batch in warm for r in batch]
    assert {r.user_id for r in made} == {WARM_UP_USER}
    assert {(r.trigger.item_id, r.trigger.category_id) if r.trigger else None for r in made} == {
        (10, 7)
    }
    assert [[r.request_id for r in batch] for batch in real] == [["a0", "a1", "a2"], ["b0", "b1"]]
    assert scorer.calls == 3 + 2
    assert [r.request_id for r in worker.sink.recommendations] == ["a0", "a1", "a2", "b0", "b1"]
    grew = _delta(before, _counts(worker))
    assert {stage: grew[stage] for stage in STAGES} == {stage: 2 for stage in STAGES}
    assert grew["end_to_end_seconds"] == 5


def test_a_ranker_failing_the_warm_up_ends_it_and_leaves_the_workers_breaker_closed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The real batch comes within the breaker's 250 ms of the failure: had the warm-up
    opened the worker's breaker, the batch would be answered by the fallback."""
    scorer = InstantScorer(failing=1)
    monkeypatch.setattr(worker_module, "build_scorer", lambda _settings: scorer)
    worker, stop = memory_worker([requests("a", 3)], exactly_once=False, warm_up_batches=3)
    with caplog.at_level(logging.WARNING, logger=worker_module.__name__):
        asyncio.run(worker.run(stop))
    assert isinstance(worker.sink, MemorySink)
    prepared = cast(MemoryPreparer, worker.preparer).prepared
    assert [len(batch) for batch in prepared] == [1, 3]  # one warm-up batch
    recs = worker.sink.recommendations
    assert [r.request_id for r in recs] == ["a0", "a1", "a2"]
    assert not any(r.degraded for r in recs) and scorer.calls == 2
    assert "warmed up: 1 batches, 1 requests" in caplog.text
    assert "stopped: triton_unavailable" in caplog.text
