"""Splitting, pacing and shifting the replay; which events ask; the variants' settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.evaluate.online import VARIANTS, RunNames, variant
from jobs.evaluate.plan import asking, shifted, speed_for, split_at, time_offset
from schemas.records import BehaviorEvent

HOUR = 3_600_000
T = 1_700_000_000_000


def ev(user: int, ts: int) -> BehaviorEvent:
    return BehaviorEvent(user, 10, 1, "pv", ts)


def test_split_keeps_time_order_on_each_side_of_the_cut() -> None:
    plan = split_at([ev(2, T + 5), ev(1, T), ev(1, T + HOUR), ev(3, T - 1)], T + 5)
    assert [e.ts for e in plan.prefix] == [T - 1, T]
    assert [e.ts for e in plan.replay] == [T + 5, T + HOUR]
    assert plan.span_ms == HOUR - 5
    with pytest.raises(ValueError, match="0 to replay"):
        split_at([ev(1, T)], T + 1)


def test_the_replay_ends_when_its_pacing_does_so_no_event_is_from_the_future() -> None:
    plan = split_at([ev(1, T), ev(1, T + 24 * HOUR), ev(1, T + 48 * HOUR)], T + HOUR)
    speed = speed_for(plan.span_ms, duration_s=240)
    assert speed == pytest.approx(360)
    wall = 1_800_000_000_000
    offset = time_offset(plan, speed, wall)
    moved = shifted(plan.replay, offset)
    assert moved[-1].ts == wall + 240_000  # sent 240 s after the start, stamped then
    # The first is sent at the start, stamped 24 h - 240 s before it.
    assert moved[0].ts == wall + 240_000 - 24 * HOUR
    assert speed_for(1000, 60) == 1.0  # never slower than real time
    with pytest.raises(ValueError, match="duration"):
        speed_for(HOUR, 0)


def test_asking_is_seeded_and_rate_one_asks_after_every_event() -> None:
    assert all(asking(50, 1.0, seed=1))
    some = asking(1000, 0.2, seed=3)
    assert some == asking(1000, 0.2, seed=3)
    assert 150 < sum(some) < 250
    with pytest.raises(ValueError, match="request rate"):
        asking(10, 0.0, seed=1)


def test_run_names_keep_runs_apart_and_projects_are_identifiers() -> None:
    names = RunNames("eval-taobao-9days-17")
    assert names.project("stream") == "eval_taobao_9days_17_stream"
    assert names.output("norank") == "eval-taobao-9days-17.recommendations.norank"
    assert len({names.events, names.requests, names.changelog}) == 3


def test_every_variant_sets_only_real_worker_settings() -> None:
    """A misspelt setting would silently run the default worker; load each through the worker."""
    from inference.worker.errors import SettingsError
    from inference.worker.settings import WorkerSettings

    for v in VARIANTS:
        environ = {f"STREAMREC_WORKER_{k}": value for k, value in v.worker.items()}
        settings = WorkerSettings.load(environ)
        for key, value in v.worker.items():
            assert str(getattr(settings, key.lower())).lower() == value.lower()
    assert variant("batch").store == "batch"
    with pytest.raises(ValueError, match="unknown variant"):
        variant("nope")
    with pytest.raises(SettingsError):
        WorkerSettings.load({"STREAMREC_WORKER_EXCLUDE_BEHAVIORS": "pv,click"})


def test_each_data_file_gets_its_own_model(tmp_path: Path) -> None:
    from jobs.evaluate.cli import eval_model_dir

    bundled = eval_model_dir(tmp_path, "movielens", None)
    seven_months = eval_model_dir(tmp_path, "movielens", tmp_path / "ml-7months")
    assert bundled != seven_months
    same_folder = tmp_path / "x" / ".." / "ml-7months"
    assert seven_months == eval_model_dir(tmp_path, "movielens", same_folder)
    assert bundled.parent.parent == tmp_path.resolve() / "eval"
