"""Running the feature job as users do (``python -m jobs.features``) and reading what it wrote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
from confluent_kafka import KafkaError, KafkaException

from jobs.replay.readback import high_watermarks, read_range
from runtime.kafka import KafkaSettings
from schemas.codec import dead_letter_codec, feature_update_codec
from schemas.features import FeatureUpdate, view_of
from schemas.records import DeadLetter

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class JobTopics:
    source: str
    changelog: str
    dead_letters: str

    def args(self) -> list[str]:
        return [
            "--source-topic", self.source,
            "--changelog-topic", self.changelog,
            "--dead-letter-topic", self.dead_letters,
            "--group-id", f"features-{self.source}",
        ]  # fmt: skip


def job_command(topics: JobTopics, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "jobs.features", *topics.args(), *extra]


def job_env(kafka: KafkaSettings) -> dict[str, str]:
    return {**os.environ, "STREAMREC_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers}


def run_bounded(
    kafka: KafkaSettings, topics: JobTopics, extra: Sequence[str] = (), timeout_s: float = 300
) -> None:
    """Run the job over what the source topic holds now, to the end."""
    result = subprocess.run(
        [*job_command(topics, ["--bounded", *extra])],
        cwd=REPO_ROOT, env=job_env(kafka), capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]


def start(
    kafka: KafkaSettings, topics: JobTopics, extra: Sequence[str] = ()
) -> subprocess.Popen[str]:
    """Start the job in its own process group (the JVM is a child of the Python process)."""
    return subprocess.Popen(
        job_command(topics, extra), cwd=REPO_ROOT, env=job_env(kafka),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def kill(process: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    process.wait(timeout=60)


def read_all(kafka: KafkaSettings, topic: str) -> list[bytes]:
    """Every record of ``topic``; none if the topic does not exist (yet).

    The job creates its dead-letter topic when it starts, so a test may look
    before it exists. Any other failure (the broker down, a timeout) raises:
    an empty answer must mean an empty topic, or ``== []`` could not fail.
    """
    try:
        end = high_watermarks(kafka, topic)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise
        return []
    return [m.value() for m in read_range(kafka, topic, {}, end)]


def changelog(kafka: KafkaSettings, topic: str) -> dict[str, list[FeatureUpdate]]:
    """The changelog's rows by view tag, in topic order within each partition."""
    views: dict[str, list[FeatureUpdate]] = defaultdict(list)
    codec = feature_update_codec()
    for value in read_all(kafka, topic):
        update = codec.decode(value)
        views[view_of(update)].append(update)
    return views


class ChangelogTail:
    """The changelog read on as it grows: each ``read()`` decodes only the rows new since the last.

    A test that polls until every window has fired would otherwise decode the whole
    topic (a million rows for the restore test) twice a second, on the cores the job
    under test needs.
    """

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.kafka, self.topic = kafka, topic
        self.views: dict[str, list[FeatureUpdate]] = defaultdict(list)
        self.distinct: dict[str, set[bytes]] = defaultdict(set)
        self._next: dict[int, int] = {}

    def read(self) -> dict[str, list[FeatureUpdate]]:
        try:
            end = high_watermarks(self.kafka, self.topic)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            return self.views
        codec = feature_update_codec()
        for message in read_range(self.kafka, self.topic, self._next, end):
            update = codec.decode(message.value())
            view = view_of(update)
            self.views[view].append(update)
            self.distinct[view].add(msgspec.json.encode(update))
        self._next = end
        return self.views


def dead_letters(kafka: KafkaSettings, topic: str) -> list[DeadLetter]:
    codec = dead_letter_codec()
    return [codec.decode(value) for value in read_all(kafka, topic)]
