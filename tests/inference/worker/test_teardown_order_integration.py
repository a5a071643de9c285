"""Ending a split and rolling a canary back under a request stream, on the real Triton and
Redis with a real worker: no request meets a version that is not ready.

The worker re-reads the routing every 500 ms here, and the canary's settle time is
shorter than that: the order of inference/serving/drain.py (unload only after every
worker has acknowledged routing without the version) is what keeps every answer on
its routed version, not a generous sleep. Unloading as soon as the routing is
published (the order before the acknowledgements) fails the requests routed in the
last poll: they come back rerouted (or degraded), and the first test fails.
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from inference.serving import repository
from inference.serving.canary import VariantFigures
from inference.serving.canary_run import Canary, Plan, RoutingStore, pinned_routing
from inference.serving.control import TritonControl
from inference.serving.drain import Drain
from runtime.kafka import KafkaSettings
from runtime.online.connect import OnlineClient
from schemas.records import Recommendation
from schemas.routing import Routing, Variant, routing_key, variant_of
from tests.conftest import TritonServer
from tests.inference.worker.conftest import StartWorker
from tests.inference.worker.harness import OutputReader, WorkerTopics
from tests.inference.worker.test_canary_integration import Stream
from tests.inference.worker.world import World

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
POLL_MS = "500"


@pytest.fixture
def two_versions(triton: TritonServer, world: World) -> Iterator[tuple[int, int]]:
    """The world's model published twice (champion, candidate), the champion served;
    Triton and the repository left as found."""
    model, model_dir = triton.model, triton.repository / triton.model
    control = TritonControl(triton.http_url)
    served_before = control.ready_versions(model)
    config_before = (model_dir / repository.CONFIG).read_text()
    champion = triton.publish(world.model_dir, serve=False)
    candidate = triton.publish(world.model_dir, serve=False)
    control.load(model, repository.with_versions(repository.read_config(model_dir), [champion]))
    try:
        yield champion, candidate
    finally:
        config = repository.read_config(model_dir)
        control.load(model, repository.with_versions(config, served_before))
        (model_dir / repository.CONFIG).write_text(config_before)
        for number in (champion, candidate):
            shutil.rmtree(model_dir / str(number), ignore_errors=True)


def answers(kafka: KafkaSettings, stream: Stream, reader: OutputReader) -> list[Recommendation]:
    sent = stream.stop()
    reader.read_until(sent, timeout_s=180, settle_s=1.0)
    recs = reader.recommendations()
    assert {r.request_id for r in recs} == {f"s-{n}" for n in range(sent)}
    return recs


def test_a_split_ends_and_a_canary_rolls_back_with_every_answer_on_its_routed_version(
    kafka: KafkaSettings,
    triton: TritonServer,
    world_project: str,
    redis_client: OnlineClient,
    start_worker: StartWorker,
    two_versions: tuple[int, int],
) -> None:
    champion, candidate = two_versions
    model, model_dir = triton.model, triton.repository / triton.model
    control = TritonControl(triton.http_url)
    key = routing_key(world_project, model)
    store = RoutingStore(redis_client, key)
    topics = WorkerTopics.create(kafka)
    start_worker(topics, triton=(triton.grpc_url, model), triton_timeout_ms="20000",
                 routing_poll_ms=POLL_MS)  # fmt: skip
    stream = Stream(kafka, topics.requests, range(1, 2001), rate=80)
    reader = OutputReader(kafka, topics.output)
    settle_s = 0.2  # under the worker's poll: only the acknowledgements make it safe
    stream.start()
    try:
        reader.read_until(50, timeout_s=120)
        # The split: the candidate loaded and ready before any routing names it.
        config = repository.read_config(model_dir)
        control.load(model, repository.with_versions(config, [champion, candidate]))
        control.wait_ready(model, [champion, candidate])
        split = Routing(model, [Variant("b", candidate, 50.0), Variant("a", champion, 50.0)],
                        1, int(time.time() * 1000))  # fmt: skip
        store.retire(split, set(), Drain(fallback_s=settle_s))
        time.sleep(3.0)
        # ...and its end: pinned to the champion, the candidate unloaded after the drain.
        ended = pinned_routing(model_dir, champion, 2, "split ended")
        store.retire(ended, {candidate}, Drain(fallback_s=settle_s))
        control.load(model, repository.with_versions(config, [champion]))
        time.sleep(1.0)

        # A canary of the candidate rolled back at its first step (its figures say the
        # model failed): the rollback's unload under the same stream.
        errors = itertools.count()

        def failing() -> dict[str, VariantFigures]:
            return {"canary": VariantFigures({"ok": 0.0, "model_error": float(next(errors))})}

        plan = Plan(steps=(50, 100), hold_s=5.0, poll_s=0.5, settle_s=settle_s)
        outcome = Canary([control], model_dir, store, failing, say=lambda _: None).run(
            candidate, plan
        )
        assert outcome.breach is not None and not outcome.promoted, outcome.timeline
        assert control.ready_versions(model) == [champion]
        time.sleep(1.0)
        recs = answers(kafka, stream, reader)
    finally:
        stream.stopping.set()
        reader.close()
        redis_client.delete(key, f"{key}:acks")
    by_variant = Counter(r.variant for r in recs)
    assert by_variant["b"] > 0 and by_variant["canary"] > 0, by_variant
    rerouted = [r for r in recs if r.rerouted_from is not None]
    degraded = [r for r in recs if r.degraded]
    assert rerouted == [] and degraded == [], (
        len(rerouted),
        len(degraded),
        (rerouted + degraded)[:2],
    )
    for rec in recs:
        if rec.variant == "b":
            assert rec.model_version == f"{model}:{candidate}", rec
        elif rec.variant in ("a", "champion"):
            assert rec.model_version == f"{model}:{champion}", rec


def test_a_routed_version_that_is_gone_is_answered_by_a_ready_one_and_flagged(
    kafka: KafkaSettings,
    triton: TritonServer,
    world_project: str,
    redis_client: OnlineClient,
    start_worker: StartWorker,
    two_versions: tuple[int, int],
) -> None:
    """A controller that unloads too early (or a worker cut off from the routing key):
    the worker answers the gone version's users through Triton's default version."""
    champion, candidate = two_versions
    model, model_dir = triton.model, triton.repository / triton.model
    control = TritonControl(triton.http_url)
    key = routing_key(world_project, model)
    config = repository.read_config(model_dir)
    control.load(model, repository.with_versions(config, [champion, candidate]))
    split = Routing(model, [Variant("b", candidate, 50.0), Variant("a", champion, 50.0)],
                    1, int(time.time() * 1000))  # fmt: skip
    RoutingStore(redis_client, key).put(split)
    control.load(model, repository.with_versions(config, [champion]))  # the wrong order
    topics = WorkerTopics.create(kafka)
    start_worker(topics, triton=(triton.grpc_url, model), triton_timeout_ms="20000",
                 routing_poll_ms=POLL_MS)  # fmt: skip
    stream = Stream(kafka, topics.requests, range(1, 401), rate=80)
    reader = OutputReader(kafka, topics.output)
    stream.start()
    try:
        reader.read_until(200, timeout_s=120)
        recs = answers(kafka, stream, reader)
    finally:
        stream.stopping.set()
        reader.close()
        redis_client.delete(key, f"{key}:acks")
    assert not [r for r in recs if r.degraded]
    for rec in recs:
        assert rec.variant == variant_of(split, rec.user_id).name
        assert rec.model_version == f"{model}:{champion}"
        assert rec.rerouted_from == (candidate if rec.variant == "b" else None), rec
