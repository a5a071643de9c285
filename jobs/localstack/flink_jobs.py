"""Submitting PyFlink jobs to the stack's Flink cluster and following them over REST.

Submission is :func:`jobs.features.flink_client.submit_python_job` (Flink's own
CLI, as on a real cluster) with the stack's address and config.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.features import flink_client
from jobs.features.errors import FeatureJobError
from jobs.localstack.errors import StackError
from jobs.localstack.flink_cluster import FlinkJobManager, rest_json
from jobs.localstack.settings import HOST, StackSettings

TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "CANCELED", "SUSPENDED"})
_JOB_ID = re.compile(r"JobID ([0-9a-f]{32})")
_POLL_S = 0.5


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    name: str
    state: str


def submit_python_job(
    settings: StackSettings,
    module: str,
    args: Sequence[str] = (),
    pyfiles: Sequence[Path] = (),
    timeout_s: float = 300.0,
) -> str:
    """Run ``module`` against the stack's cluster with ``flink run -d``; returns the job id.

    The client uses the cluster's own config, so it agrees with it on everything.
    """
    jobmanager = FlinkJobManager(settings)
    if not jobmanager.is_healthy():
        raise StackError(
            f"no Flink JobManager answers at {settings.flink_rest_url}; start the cluster "
            "with `python -m jobs.localstack up --services flink`."
        )
    client_dir = settings.home / "flink-client"
    (client_dir / "log").mkdir(parents=True, exist_ok=True)
    client_env = {
        "FLINK_CONF_DIR": str(jobmanager.conf_dir),
        # Otherwise the client logs into the installed wheel's pyflink/log/.
        "FLINK_LOG_DIR": str(client_dir / "log"),
    }
    address = f"{HOST}:{settings.flink_rest_port}"
    try:
        return flink_client.submit_python_job(
            address, module, args, pyfiles, client_env=client_env, timeout_s=timeout_s
        )
    except FeatureJobError as exc:
        raise StackError(str(exc)) from exc


def job_status(settings: StackSettings, job_id: str) -> str:
    """The job's state as Flink names it: RUNNING, FINISHED, FAILED, CANCELED, ..."""
    return str(rest_json(settings.flink_rest_url, f"/jobs/{job_id}")["state"])


def list_jobs(settings: StackSettings) -> list[JobSummary]:
    answer = rest_json(settings.flink_rest_url, "/jobs/overview")
    return [JobSummary(job["jid"], job["name"], job["state"]) for job in answer.get("jobs", [])]


def cancel_job(settings: StackSettings, job_id: str) -> None:
    """Ask the JobManager to cancel; returns at once (follow up with wait_for_job)."""
    rest_json(settings.flink_rest_url, f"/jobs/{job_id}?mode=cancel", method="PATCH")


def wait_for_job(
    settings: StackSettings, job_id: str, states: Collection[str], timeout_s: float = 60.0
) -> str:
    """Poll until the job is in one of `states`; StackError if it ends elsewhere or times out.

    A job that fails reports its root exception in the error, so callers need not
    dig through the TaskManager log.
    """
    wanted = {state.upper() for state in states}
    deadline = time.monotonic() + timeout_s
    while True:
        state = job_status(settings, job_id)
        if state in wanted:
            return state
        if state in TERMINAL_STATES:
            raise StackError(
                f"job {job_id} ended {state}, not {'/'.join(sorted(wanted))}"
                f"{_root_exception(settings, job_id)}"
            )
        if time.monotonic() >= deadline:
            raise StackError(f"job {job_id} still {state} after {timeout_s:.0f} s")
        time.sleep(_POLL_S)


def _root_exception(settings: StackSettings, job_id: str) -> str:
    """The newest failure's exception chain, without the stack frames ("" if unknown)."""
    try:
        answer = rest_json(settings.flink_rest_url, f"/jobs/{job_id}/exceptions")
        entries = answer["exceptionHistory"]["entries"]
        trace = str(entries[0]["stacktrace"])
    except (StackError, KeyError, IndexError, TypeError):
        return ""
    return ":\n" + "\n".join(summarize_trace(trace))[:3000]


def summarize_trace(trace: str) -> list[str]:
    """A Java stack trace reduced to its exception and `Caused by:` lines (the why)."""
    return [line for line in trace.splitlines() if line and not line[0].isspace()]
