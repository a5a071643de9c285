"""The demo's feature step: the feature job and writer over the replayed stream, read via Feast."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from jobs.feature_writer.codec import feature_update_codec
from jobs.feature_writer.feast_env import feast_apply, feast_environment, load_store
from jobs.replay.readback import high_watermarks, read_range
from schemas.features import view_of
from schemas.kafka import KafkaSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def run(module: str, args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{done.stderr[-3000:]}")


def changelog_counts(kafka: KafkaSettings, topic: str) -> Counter[str]:
    codec = feature_update_codec()
    messages = read_range(kafka, topic, {}, high_watermarks(kafka, topic))
    return Counter(view_of(codec.decode(message.value())) for message in messages)


def feature_step(kafka: KafkaSettings, redis_url: str, source: str) -> tuple[Counter[str], int]:
    """Run the job (bounded) and the writer; return changelog rows per view and dead letters."""
    env = {**os.environ, "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
           "STREAMREC_REDIS_URL": redis_url}  # fmt: skip
    changelog, dead_letters = f"{source}.features", f"{source}.dlq"
    started = time.perf_counter()
    topics = ["--source-topic", source, "--changelog-topic", changelog]
    run("jobs.features", ["--bounded", *topics, "--dead-letter-topic", dead_letters,
                          "--group-id", source], env)  # fmt: skip
    print(f"feature job done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    counts = changelog_counts(kafka, changelog)
    run("jobs.feature_writer", ["--topic", changelog, "--group-id", source,
                                "--max-records", str(sum(counts.values()))], env)  # fmt: skip
    return counts, sum(high_watermarks(kafka, dead_letters).values())


def applied_environment(redis_url: str) -> dict[str, str]:
    """Register the feature views; return the environment the store is loaded with."""
    env = {**os.environ, "STREAMREC_REDIS_URL": redis_url}
    env.update(feast_environment(env))
    done = feast_apply(environ=env)
    if done.returncode != 0:
        raise RuntimeError(f"feast apply failed:\n{done.stderr[-3000:]}")
    return env


def show_users(redis_url: str, users: list[int]) -> list[str]:
    """Each user's fresh clicks and latest window, as Feast's get_online_features returns them."""
    store = load_store(environ=applied_environment(redis_url))
    features = ["user_recent_clicks:item_ids", "user_recent_clicks:behaviors",
                "user_click_window:pv_count", "user_click_window:buy_count"]  # fmt: skip
    rows: dict[str, list[Any]] = store.get_online_features(
        features=features, entity_rows=[{"user_id": user} for user in users]
    ).to_dict()
    return [
        f"user {user}: recent items {items} ({', '.join(behaviors)}); "
        f"latest window pv={pv} buy={buy}"
        for user, items, behaviors, pv, buy in zip(
            rows["user_id"], rows["item_ids"], rows["behaviors"], rows["pv_count"],
            rows["buy_count"], strict=True,
        )
    ]  # fmt: skip
