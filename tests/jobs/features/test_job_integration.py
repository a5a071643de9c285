"""The feature job on the real broker, against hand-computed windows and the reference."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from jobs.datasets import RowAudit, read_dataset
from jobs.features.settings import FeatureJobSettings
from jobs.replay.producer import KeyedProducer, user_key
from jobs.replay.run import ReplayOptions, run_replay
from runtime.kafka import KafkaSettings
from schemas.codec import event_codec
from schemas.features import FeatureUpdate, pack_event
from schemas.records import BehaviorEvent
from schemas.reference import (
    WindowSpec,
    category_windows,
    changed_windows,
    item_windows,
    newest_windows,
    user_recent,
    user_windows,
)
from tests.conftest import TopicFactory
from tests.jobs.features import oracle
from tests.jobs.features.harness import JobTopics, changelog, dead_letters, run_bounded
from tests.schemas.test_reference import EVENTS, MIN, T

pytestmark = pytest.mark.integration

DEFAULTS = FeatureJobSettings()
SPEC = WindowSpec(DEFAULTS.window_ms, DEFAULTS.slide_ms, DEFAULTS.sequence_length,
                  DEFAULTS.top_items)  # fmt: skip


def topics_for(topic_factory: TopicFactory, partitions: int) -> JobTopics:
    source = topic_factory(partitions=partitions)
    return JobTopics(source, source + "-features", source + "-dlq")


def produce(kafka: KafkaSettings, topic: str, events: list[BehaviorEvent]) -> None:
    producer, codec = KeyedProducer(kafka), event_codec()
    for event in events:
        producer.send(topic, user_key(event.user_id), codec.encode(event))
    assert producer.flush().failed == 0


def as_set(rows: Sequence[FeatureUpdate]) -> set[bytes]:
    return {msgspec.json.encode(row) for row in rows}


def assert_matches_reference(
    views: dict[str, list[FeatureUpdate]], events: list[BehaviorEvent], mode: str
) -> None:
    """Every window row (modes every, sql), or the changed ones the store keeps (changed)."""
    items = item_windows(events, SPEC)
    expected: dict[str, Sequence[FeatureUpdate]] = {
        "user_window": user_windows(events, SPEC),
        "item_window": items,
        "category_window": category_windows(items, SPEC),
    }
    for view, rows in expected.items():
        if mode == "changed":
            changed = changed_windows(rows, events, SPEC)  # type: ignore[type-var]
            assert_changed_windows(views[view], changed, view)
        else:
            assert len(views[view]) == len(rows), view  # no row twice, none missing
            assert as_set(views[view]) == as_set(rows), view
    by_user: dict[int, list[FeatureUpdate]] = {}
    for row in views["user_recent"]:
        by_user.setdefault(row.user_id, []).append(row)  # type: ignore[union-attr]
    reference: dict[int, list[FeatureUpdate]] = {}
    for row in user_recent(events, SPEC):
        reference.setdefault(row.user_id, []).append(row)
    assert by_user == reference


def assert_changed_windows(
    got: Sequence[FeatureUpdate], changed: Sequence[FeatureUpdate], view: str
) -> None:
    """``changed`` mode: each row one of the reference's ``changed`` windows, none twice,
    and per key the newest of them (what the store keeps) all there."""
    assert len(got) == len(as_set(got)), view
    assert as_set(got) <= as_set(changed), view
    assert newest_windows(got) == newest_windows(changed), view  # type: ignore[arg-type]


# The sql mode's windows are held to the hand-computed rows by the oracle test below.
@pytest.mark.parametrize("mode", ["every"])
def test_hand_made_events_give_the_hand_computed_windows(
    kafka: KafkaSettings, topic_factory: TopicFactory, mode: str
) -> None:
    topics = topics_for(topic_factory, partitions=2)
    produce(kafka, topics.source, EVENTS)
    run_bounded(kafka, topics, ["--window-mode", mode])
    views = changelog(kafka, topics.changelog)
    window = next(
        row for row in views["user_window"]
        if row.user_id == 1 and row.window_start == T + 5 * MIN  # type: ignore[union-attr]
    )  # fmt: skip
    assert msgspec.structs.asdict(window) == {
        "user_id": 1, "window_start": T + 5 * MIN, "window_end": T + 35 * MIN,
        "events": [pack_event(T + 7 * MIN, 10, 100, "cart"),
                   pack_event(T + 33 * MIN, 11, 100, "buy")],
        "pv": 0, "cart": 1, "fav": 0, "buy": 1,
    }  # fmt: skip
    assert len(views["user_window"]) == 12 + 6  # user 1: 12 windows, user 2: 6
    assert_matches_reference(views, EVENTS, mode)
    assert dead_letters(kafka, topics.dead_letters) == []


@pytest.mark.parametrize("mode", ["changed", "every"])
def test_taobao_nine_days_equal_the_reference_for_every_user(
    kafka: KafkaSettings, topic_factory: TopicFactory, mode: str
) -> None:
    topics = topics_for(topic_factory, partitions=4)
    options = ReplayOptions(dataset="taobao-9days", topic=topics.source, sort_by_time=True)
    assert run_replay(options, kafka).ok
    # A watermark every millisecond: read at full speed, the nine days then pass in
    # advances of a few slides, so both regimes of the changed mode are met (several
    # change points in one advance, and one).
    run_bounded(kafka, topics, ["--window-mode", mode, "--watermark-interval-ms", "1"])
    events = sorted(read_dataset("taobao-9days", None, RowAudit()), key=lambda e: e.ts)
    views = changelog(kafka, topics.changelog)
    assert_matches_reference(views, events, mode)
    if mode == "changed":  # and the watermark jumps many slides at a time in a backfill
        assert len(views["item_window"]) < len(item_windows(events, SPEC)) / 2
    assert len({row.user_id for row in views["user_window"]}) == 294  # type: ignore[union-attr]
    assert dead_letters(kafka, topics.dead_letters) == []


@pytest.mark.parametrize("mode", ["every", "sql", "changed"])
def test_the_job_gives_the_hand_computed_oracle_rows(
    kafka: KafkaSettings, topic_factory: TopicFactory, mode: str
) -> None:
    """Window edges, ties, a cut sequence and tied trends, checked against rows worked by hand."""
    topics = topics_for(topic_factory, partitions=1)  # one partition: arrival order is fixed
    produce(kafka, topics.source, oracle.EVENTS)
    run_bounded(kafka, topics, [*oracle.FLAGS, "--window-mode", mode])
    views = changelog(kafka, topics.changelog)
    expected: dict[str, Sequence[FeatureUpdate]] = {
        "user_window": oracle.USER_WINDOWS,
        "item_window": oracle.ITEM_WINDOWS,
        "category_window": oracle.CATEGORY_WINDOWS,
    }
    for view, rows in expected.items():
        if mode == "changed":
            changed = changed_windows(rows, oracle.EVENTS, oracle.SPEC)  # type: ignore[type-var]
            assert_changed_windows(views[view], changed, view)
        else:
            assert len(views[view]) == len(rows), view
            assert as_set(views[view]) == as_set(rows), view
    # The changelog keeps each user's rows in order (keyed), not the order across users.
    assert by_user(views["user_recent"]) == by_user(oracle.USER_RECENT)
    assert dead_letters(kafka, topics.dead_letters) == []


def by_user(rows: Sequence[FeatureUpdate]) -> dict[int, list[FeatureUpdate]]:
    grouped: dict[int, list[FeatureUpdate]] = {}
    for row in rows:
        grouped.setdefault(row.user_id, []).append(row)  # type: ignore[union-attr]
    return grouped
