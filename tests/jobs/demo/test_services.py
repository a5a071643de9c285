from __future__ import annotations

import os
import subprocess
from pathlib import Path

from jobs.demo.services import yield_primary
from jobs.localstack.service import ServiceStatus


def status(name: str, pid: int | None) -> ServiceStatus:
    return ServiceStatus(name, pid is not None, pid is not None, pid, "", Path("/dev/null"))


def test_the_primary_yields_like_the_feature_path_and_the_replica_does_not() -> None:
    # Two real processes in sessions of their own, as the stack starts Redis's.
    primary, replica = (subprocess.Popen(["sleep", "30"], start_new_session=True) for _ in range(2))
    try:
        base = os.getpriority(os.PRIO_PROCESS, 0)
        statuses = [status("redis-replica", replica.pid), status("redis", primary.pid)]
        assert yield_primary(statuses, 10) == primary.pid
        assert os.getpriority(os.PRIO_PROCESS, primary.pid) == min(base + 10, 19)
        assert os.getpriority(os.PRIO_PROCESS, replica.pid) == base
        # Its session's autogroup too, where the kernel schedules by autogroup.
        autogroup = Path(f"/proc/{primary.pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "10"
            assert Path(f"/proc/{replica.pid}/autogroup").read_text().split()[-1] == "0"
    finally:
        for process in (primary, replica):
            process.kill()
            process.wait()


def test_a_primary_that_is_not_running_is_left_alone() -> None:
    assert yield_primary([status("redis", None)], 10) is None
    assert yield_primary([], 10) is None
