"""Job -> changelog -> feature writer -> Feast: get_online_features returns what the job wrote."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runtime.kafka import KafkaSettings
from tests.conftest import REPO_ROOT, TopicFactory
from tests.feature_repo.applied import AppliedRepo, feast_repo
from tests.jobs.features.harness import read_all, run_bounded
from tests.jobs.features.test_job_integration import produce, topics_for
from tests.schemas.test_reference import EVENTS, MIN, T

pytestmark = pytest.mark.integration
__all__ = ["feast_repo"]


def run_writer(kafka: KafkaSettings, repo: AppliedRepo, topic: str, records: int) -> None:
    env = {
        **os.environ,
        "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMREC_REDIS_URL": repo.redis_url,
        "STREAMREC_FEATURE_WRITER_PROJECT": repo.project,
    }
    args = ["--topic", topic, "--group-id", topic, "--max-records", str(records)]
    done = subprocess.run([sys.executable, "-m", "jobs.feature_writer", *args], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def online(repo: AppliedRepo, features: list[str], rows: list[dict[str, int]]) -> dict[str, list]:  # type: ignore[type-arg]
    result = repo.store.get_online_features(features=features, entity_rows=rows).to_dict()
    return {name: values for name, values in result.items() if name not in rows[0]}


def test_feast_reads_what_the_job_computed(
    kafka: KafkaSettings, topic_factory: TopicFactory, feast_repo: AppliedRepo
) -> None:
    topics = topics_for(topic_factory, partitions=2)
    produce(kafka, topics.source, EVENTS)
    run_bounded(kafka, topics)
    run_writer(kafka, feast_repo, topics.changelog, len(read_all(kafka, topics.changelog)))

    fresh = [f"user_recent_clicks:{f}" for f in ("item_ids", "behaviors", "event_ts")]
    recent = online(feast_repo, fresh, [{"user_id": 1}])
    # The last 30 minutes as of the newest click (00:33): the 00:01 view has left.
    assert recent == {
        "item_ids": [[10, 11]],
        "behaviors": [["cart", "buy"]],
        "event_ts": [[T + 7 * MIN, T + 33 * MIN]],
    }
    # The last window holding user 1's events, [00:30, 01:00), holds only the buy, as
    # every window since [00:10, 00:40), where the cart left: the changed mode writes
    # that first one. User 2's only view: every window holds it from [-00:25, 00:05).
    window = online(feast_repo, [f"user_click_window:{f}" for f in
                                 ("item_ids", "pv_count", "buy_count", "window_start")],
                    [{"user_id": 1}, {"user_id": 2}, {"user_id": 404}])  # fmt: skip
    assert window == {
        "item_ids": [[11], [11], None],
        "pv_count": [0, 1, None],
        "buy_count": [1, 0, None],
        "window_start": [T + 10 * MIN, T - 25 * MIN, None],
    }
    trends = online(feast_repo, [f"category_trends:{f}" for f in
                                 ("top_item_ids", "top_item_scores", "buy", "conversion")],
                    [{"category_id": 100}])  # fmt: skip
    assert trends == {"top_item_ids": [[11]], "top_item_scores": [[4]], "buy": [1],
                      "conversion": [0.0]}  # fmt: skip
