"""Submitting a PyFlink module to a Flink cluster with Flink's own CLI (``flink run -pym``).

As on any real cluster: the CLI runs the Python module once on the client to
build the job graph, then ships the graph, its ``pipeline.jars`` and the
``-pyfs`` files to the JobManager. The CLI comes from the Flink distribution
inside the installed ``apache-flink`` wheel.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from jobs.features.errors import SubmissionError

_JOB_ID = re.compile(r"JobID ([0-9a-f]{32})")


def flink_home() -> Path:
    """The Flink distribution inside the installed ``apache-flink`` wheel."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        raise SubmissionError(
            "PyFlink is not installed: Flink runs from the apache-flink wheel. "
            "Install the flink extra: `.venv/bin/pip install -e '.[flink]'`."
        )
    home = Path(spec.origin).parent
    if not (home / "bin" / "jobmanager.sh").exists():
        raise SubmissionError(f"{home} has no bin/jobmanager.sh; reinstall apache-flink")
    return home


def zip_packages(root: Path, packages: Sequence[str], dest: Path) -> Path:
    """The ``packages`` under ``root`` as one zip for ``-pyfs``, e.g. ``("jobs", "schemas")``.

    Flink puts a ``-pyfs`` folder itself on PYTHONPATH (its modules become top-level)
    and copies it whole, so the repository root (with .venv/) is no way to make
    ``import jobs.x`` work. A zip is extracted and its top level put on PYTHONPATH.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in packages:
            for path in sorted((root / package).rglob("*.py")):
                archive.write(path, path.relative_to(root).as_posix())
    return dest


def build_run_command(
    jobmanager: str, module: str, args: Sequence[str], pyfiles: Sequence[Path]
) -> list[str]:
    """``flink run`` for a Python module, detached, using this interpreter on both sides."""
    argv = [str(flink_home() / "bin" / "flink"), "run", "-m", jobmanager, "-d"]
    # -pyclientexec runs the module at submission; -pyexec would run Python UDFs.
    argv += ["-pyclientexec", sys.executable, "-pyexec", sys.executable]
    if pyfiles:
        argv += ["-pyfs", ",".join(str(Path(p).resolve()) for p in pyfiles)]
    argv += ["-pym", module]
    # `--` ends Flink's options; everything after it reaches the module's argv.
    return [*argv, "--", *args]


def submit_python_job(
    jobmanager: str,
    module: str,
    args: Sequence[str] = (),
    pyfiles: Sequence[Path] = (),
    *,
    client_env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
) -> str:
    """Run ``module`` against the JobManager at ``host:port`` with ``flink run -d``; the job id.

    The module must end by submitting a job (e.g. ``TableEnvironment.execute_sql``
    of an INSERT) and put its connector jars in ``pipeline.jars`` itself.
    ``client_env`` adds to the CLI's environment (``FLINK_CONF_DIR``, ``FLINK_LOG_DIR``).
    """
    argv = build_run_command(jobmanager, module, args, pyfiles)
    output = _run_client(argv, {**os.environ, **(client_env or {})}, timeout_s)
    return parse_job_id(output, what=f"`flink run -pym {module}`")


def parse_job_id(output: str, what: str = "flink run") -> str:
    match = _JOB_ID.search(output)
    if match is None:
        raise SubmissionError(f"{what} printed no job id; its output ends with:\n{output[-3000:]}")
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
        raise SubmissionError(
            f"flink run did not finish within {timeout_s:.0f} s; output ends with:\n"
            f"{output[-3000:]}"
        ) from None
    if child.returncode != 0:
        # Java stack frames would push the Python traceback out of the tail.
        kept = "\n".join(line for line in output.splitlines() if not line.startswith("\t"))
        raise SubmissionError(f"flink run failed (exit {child.returncode}):\n{kept[-3000:]}")
    return output
