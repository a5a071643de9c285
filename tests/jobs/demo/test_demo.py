"""`make demo` end to end: the whole loop against the test session's Kafka, Redis and Triton."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from jobs.demo.cli import main
from jobs.demo.loop import READY_TIMEOUT_S, WARM_UP_USER
from runtime.online.connect import connect
from schemas.views import PROJECT
from tests.conftest import REPO_ROOT, Endpoints, TritonServer
from tests.inference.worker.world import build_world, stream_events

pytestmark = pytest.mark.integration

EVENTS = 20_000


def test_demo_runs_the_whole_loop_on_the_stream(
    stack: Endpoints,
    triton: TritonServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    # An untrained ranker over the stream's items stands in for `make train` (minutes);
    # the drift reference is built the way the training run builds it, on fewer rows.
    model_dir = tmp_path / "model"
    build_world(model_dir, stream_events(EVENTS))
    subprocess.run([sys.executable, "-m", "jobs.drift", "reference", "--max-rows", "20000",
                    "--out", str(model_dir / "drift_reference.parquet")],
                   cwd=REPO_ROOT, check=True, capture_output=True)  # fmt: skip
    triton.publish(model_dir)
    monkeypatch.setenv("STREAMREC_KAFKA_BOOTSTRAP_SERVERS", stack.kafka_bootstrap)
    monkeypatch.setenv("STREAMREC_REDIS_URL", stack.redis_url)
    monkeypatch.setenv("STREAMREC_TRITON_URL", triton.grpc_url)
    monkeypatch.setenv("STREAMREC_STACK_HOME", str(tmp_path / "stack"))
    # Free ports, not the fixed defaults: nothing else on the box may hold those.
    monkeypatch.setenv("STREAMREC_WORKER_METRICS_PORT", "0")
    monkeypatch.setenv("STREAMREC_DRIFT_METRICS_PORT", "0")
    monkeypatch.setenv("STREAMREC_FEATURE_WRITER_METRICS_PORT", "0")
    store = connect(stack.redis_url)
    store.set(f"{PROJECT}:demo-test:kept", "1")  # another project's key: a run leaves it be
    code = main(["--limit", str(EVENTS), "--speed", "0", "--model-dir", str(model_dir)])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out
    assert "PASS: the whole loop answered every request once" in out
    assert re.search(r"missing / duplicated / unknown\s+0 / 0 / 0\n", out)
    produced, answered = map(
        int, re.findall(r"requests produced / answered\s+(\d+) / (\d+)", out)[0]
    )
    assert produced == answered > 0
    assert re.search(r"dead-lettered\s+0\n", out)
    assert out.count("→ recommended") == 3
    # The run replays the stream the reference was built from: an alert on a feature is a
    # false alarm. The scores have no saved reference: the watch takes the run's first
    # answers as their baseline, and an untrained model's near-constant scores move as the
    # store warms up (answers before any trend or co-visit exists), so only they may move.
    line = r"drift check\s+(ok|drift): (\d+) of \d+ features drifted(?: \((.*)\))?"
    verdict = re.search(line, out)
    assert verdict is not None, out[-2000:]
    drifted = verdict.group(3).split(", ") if verdict.group(3) else []
    assert all(name.startswith("rec_") for name in drifted), out[-2000:]
    recount_from_the_topics(stack.kafka_bootstrap, out)
    # The run read and wrote a Feast project of its own and removed it at the end.
    [run_project] = re.findall(r"Feast project (\w+)", captured.err)
    assert run_project.startswith(f"{PROJECT}_demo_")
    assert list(store.scan_iter(match=f"{PROJECT}_demo_*")) == []
    assert list(store.scan_iter(match=f"*{PROJECT}_demo_*")) == []
    assert store.get(f"{PROJECT}:demo-test:kept") == b"1"
    # Every service was given, so the demo started no local one of its own.
    started = [d.name for d in (tmp_path / "stack").iterdir() if d.name != "demo"]
    assert started == []


def read_topic(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every record of a topic as plain JSON, read with a bare consumer (not the demo's code)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"recount-{uuid.uuid4().hex[:8]}",
         "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )  # fmt: skip
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p))[1]
                for p in metadata.partitions}  # fmt: skip
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        while len(records) < sum(ends.values()):
            assert time.monotonic() < deadline, f"{len(records)} of {sum(ends.values())} read"
            for message in consumer.consume(1000, timeout=0.5):
                value = message.value()
                if message.error() is None and value is not None:
                    records.append(json.loads(value))
        return records
    finally:
        consumer.close()


def recount_from_the_topics(bootstrap: str, out: str) -> None:
    """The demo's own summary, checked against the run's topics counted independently."""
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    runs = sorted(t.removesuffix(".rec-requests") for t in topics if t.endswith(".rec-requests")
                  and t.startswith("demo-"))  # fmt: skip
    run = runs[-1]
    events = read_topic(bootstrap, f"{run}.user-behavior")
    requests = read_topic(bootstrap, f"{run}.rec-requests")
    answers = read_topic(bootstrap, f"{run}.recommendations")
    # The demo sends the first EVENTS rows of the file plus its probe clicks: one a second
    # until the first is readable from the store (more on a busy box), each above every
    # user of the file.
    probes = [e for e in events if e["user_id"] >= WARM_UP_USER]
    assert len(events) - len(probes) == EVENTS and 1 <= len(probes) <= READY_TIMEOUT_S
    sent = int(re.findall(r"events sent \(file \+ probes\)\s+(\d+)", out)[0])
    assert sent == len(events)
    asked = Counter(r["request_id"] for r in requests)
    answered = Counter(a["request_id"] for a in answers)
    assert asked and max(asked.values()) == 1
    assert answered == asked  # every request answered exactly once, nothing unknown
    produced = int(re.findall(r"requests produced / answered\s+(\d+) /", out)[0])
    assert produced == len(requests)
    by_request = {a["request_id"]: a for a in answers}
    for request in requests:
        assert by_request[request["request_id"]]["user_id"] == request["user_id"]
