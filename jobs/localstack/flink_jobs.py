"""Submitting PyFlink jobs to the stack's Flink cluster and following them over REST.

Submission goes through Flink's own CLI (`flink run -pym`), as on a real cluster:
it runs the Python module once on the client to build the job graph, then ships
the graph, the `pipeline.jars` and the `-pyfs` files to the JobManager.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.errors import StackError
from jobs.localstack.flink_cluster import FlinkJobManager, flink_home, rest_json
from jobs.localstack.settings import HOST, StackSettings

TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "CANCELED", "SUSPENDED"})
_JOB_ID = re.compile(r"JobID ([0-9a-f]{32})")
_POLL_S = 0.5


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    name: str
    state: str


def zip_packages(root: Path, packages: Sequence[str], dest: Path) -> Path:
    """The `packages` under `root` as one zip for `-pyfs`, e.g. ("jobs", "schemas").

    Flink puts a `-pyfs` folder itself on PYTHONPATH (its modules become top-level)
    and copies it whole, so the repository root (with .venv/) is no way to make
    `import jobs.x` work. A zip is extracted and its top level put on PYTHONPATH.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in packages:
            for path in sorted((root / package).rglob("*.py")):
                archive.write(path, path.relative_to(root).as_posix())
    return dest


def build_run_command(
    settings: StackSettings, module: str, args: Sequence[str], pyfiles: Sequence[Path]
) -> list[str]:
    """`flink run` for a Python module, detached, using this interpreter on both sides."""
    argv = [str(flink_home() / "bin" / "flink"), "run"]
    argv += ["-m", f"{HOST}:{settings.flink_rest_port}", "-d"]
    # -pyclientexec runs the module at submission; -pyexec would run Python UDFs.
    argv += ["-pyclientexec", sys.executable, "-pyexec", sys.executable]
    if pyfiles:
        argv += ["-pyfs", ",".join(str(Path(p).resolve()) for p in pyfiles)]
    argv += ["-pym", module]
    # `--` ends Flink's options; everything after it reaches the module's argv.
    return [*argv, "--", *args]


def submit_python_job(
    settings: StackSettings,
    module: str,
    args: Sequence[str] = (),
    pyfiles: Sequence[Path] = (),
    timeout_s: float = 300.0,
) -> str:
    """Run `module` against the cluster with `flink run -d`; returns the job id.

    The module must end by submitting a job (e.g. `TableEnvironment.execute_sql`
    of an INSERT) and put its connector jars in `pipeline.jars` itself.
    """
    jobmanager = FlinkJobManager(settings)
    if not jobmanager.is_healthy():
        raise StackError(
            f"no Flink JobManager answers at {settings.flink_rest_url}; start the cluster "
            "with `python -m jobs.localstack up --services flink`."
        )
    client_dir = settings.home / "flink-client"
    (client_dir / "log").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        # The cluster's own config: the client then agrees with it on everything.
        "FLINK_CONF_DIR": str(jobmanager.conf_dir),
        # Otherwise the client logs into the installed wheel's pyflink/log/.
        "FLINK_LOG_DIR": str(client_dir / "log"),
    }
    argv = build_run_command(settings, module, args, pyfiles)
    output = _run_client(argv, env, timeout_s)
    return parse_job_id(output, what=f"`flink run -pym {module}`")


def parse_job_id(output: str, what: str = "flink run") -> str:
    match = _JOB_ID.search(output)
    if match is None:
        raise StackError(f"{what} printed no job id; its output ends with:\n{output[-3000:]}")
    return match.group(1)


def _run_client(argv: list[str], env: dict[str, str], timeout_s: float) -> str:
    # A session of its own: on timeout the CLI's JVM *and* the Python driver it
    # started must go, and only a process group reaches both.
    child = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        raise StackError(
            f"flink run did not finish within {timeout_s:.0f} s; output ends with:\n"
            f"{output[-3000:]}"
        ) from None
    if child.returncode != 0:
        # Java stack frames would push the Python traceback out of the tail.
        kept = "\n".join(line for line in output.splitlines() if not line.startswith("\t"))
        raise StackError(f"flink run failed (exit {child.returncode}):\n{kept[-3000:]}")
    return output


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
