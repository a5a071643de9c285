"""The default transactional id: a slot per live worker of a group and host, reused after death."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inference.worker import instance
from inference.worker.instance import claim_instance


def test_concurrent_workers_of_a_group_get_distinct_ids(tmp_path: Path) -> None:
    first = claim_instance("recs", tmp_path, host="pod-a")
    second = claim_instance("recs", tmp_path, host="pod-a")
    assert (first.transactional_id, second.transactional_id) == ("recs-pod-a-0", "recs-pod-a-1")
    other_group = claim_instance("other", tmp_path, host="pod-a")
    assert other_group.slot == 0


def test_a_worker_started_after_one_stopped_takes_its_id(tmp_path: Path) -> None:
    first = claim_instance("recs", tmp_path, host="h")
    second = claim_instance("recs", tmp_path, host="h")
    first.release()
    assert claim_instance("recs", tmp_path, host="h").transactional_id == "recs-h-0"
    assert second.slot == 1


def test_a_killed_process_leaves_its_slot_free(tmp_path: Path) -> None:
    """The kernel drops a dead process's flock: a restart after kill -9 gets the same id."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path;"
         "from inference.worker.instance import claim_instance;"
         f"held = claim_instance('recs', Path({str(tmp_path)!r}), host='h');"
         "print('held', flush=True);"
         "time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert claim_instance("recs", tmp_path, host="h").slot == 1  # held by the live child
        holder.kill()
        holder.wait()
        assert claim_instance("recs", tmp_path, host="h").slot == 0
    finally:
        holder.kill()


def test_the_host_name_tells_replicas_apart_and_is_the_default(tmp_path: Path) -> None:
    claim = claim_instance("recs", tmp_path)
    assert claim.transactional_id.startswith("recs-") and claim.transactional_id.endswith("-0")
    assert claim.transactional_id != "recs--0"


def test_unsafe_group_names_still_make_one_lock_file(tmp_path: Path) -> None:
    claim_instance("a/b c", tmp_path, host="h")
    assert [p.name for p in tmp_path.iterdir()] == ["a_b_c-0.lock"]


def test_running_out_of_slots_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(instance, "MAX_SLOTS", 2)
    held = [claim_instance("recs", tmp_path, host="h") for _ in range(2)]
    with pytest.raises(RuntimeError, match="set a transactional id per worker"):
        claim_instance("recs", tmp_path, host="h")
    assert len(held) == 2
