"""Job submission and the REST helpers against a fake JobManager (no Flink started)."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from jobs.localstack import StackError, StackSettings
from jobs.localstack import flink_jobs as fj

JOB = "0fcc306ede87cbd130736248a5e38c4c"
TRACE = (
    "org.apache.flink.runtime.JobException: Recovery is suppressed\n"
    "\tat org.apache.flink.Foo.bar(Foo.java:1)\n"
    "Caused by: java.lang.ArithmeticException: / by zero\n"
    "\t... 14 more\n"
)


class FakeJobManager(BaseHTTPRequestHandler):
    """Answers like Flink's REST API; each GET of the job pops the next state."""

    states: ClassVar[list[str]] = []
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def _answer(self) -> None:
        FakeJobManager.requests.append(f"{self.command} {self.path}")
        body: object
        if self.path == "/overview":
            body = {"taskmanagers": 1}
        elif self.path == "/jobs/overview":
            body = {"jobs": [{"jid": JOB, "name": "smoke", "state": "RUNNING"}]}
        elif self.path == f"/jobs/{JOB}":
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            body = {"jid": JOB, "state": state}
        elif self.path == f"/jobs/{JOB}/exceptions":
            body = {"exceptionHistory": {"entries": [{"stacktrace": TRACE}]}}
        elif self.path == f"/jobs/{JOB}?mode=cancel":
            self.send_response(202)
            self.end_headers()
            return
        else:
            self.send_error(404, "not found")
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep pytest's output clean


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[StackSettings]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeJobManager)
    FakeJobManager.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield StackSettings(tmp_path, tmp_path, 1, 2, 3, flink_rest_port=server.server_port)
    finally:
        server.shutdown()
        server.server_close()


def test_submit_refuses_when_no_jobmanager_answers(tmp_path: Path) -> None:
    settings = StackSettings(tmp_path, tmp_path, 1, 2, 3, flink_rest_port=1)
    with pytest.raises(StackError, match=r"no Flink JobManager answers at http://127\.0\.0\.1:1;"):
        fj.submit_python_job(settings, "m", [], [])


def test_wait_returns_once_the_state_is_reached(fake: StackSettings) -> None:
    FakeJobManager.states = ["CREATED", "RUNNING", "RUNNING", "FINISHED"]
    assert fj.wait_for_job(fake, JOB, ["finished"], timeout_s=10) == "FINISHED"


def test_wait_reports_the_cause_of_a_failed_job(fake: StackSettings) -> None:
    FakeJobManager.states = ["RUNNING", "FAILED"]
    with pytest.raises(StackError, match=r"ended FAILED, not FINISHED:\n.*suppressed\nCaused by"):
        fj.wait_for_job(fake, JOB, ["FINISHED"], timeout_s=10)


def test_wait_times_out(fake: StackSettings) -> None:
    FakeJobManager.states = ["RUNNING"]
    with pytest.raises(StackError, match="still RUNNING after 0 s"):
        fj.wait_for_job(fake, JOB, ["FINISHED"], timeout_s=0.2)


def test_status_list_and_cancel(fake: StackSettings) -> None:
    FakeJobManager.states = ["RUNNING"]
    assert fj.job_status(fake, JOB) == "RUNNING"
    assert fj.list_jobs(fake) == [fj.JobSummary(JOB, "smoke", "RUNNING")]
    fj.cancel_job(fake, JOB)
    assert FakeJobManager.requests[-1] == f"PATCH /jobs/{JOB}?mode=cancel"
    with pytest.raises(StackError, match="HTTP 404"):
        fj.job_status(fake, "feedfacefeedfacefeedfacefeedface")


def test_summarize_trace_keeps_exceptions_not_frames() -> None:
    assert fj.summarize_trace(TRACE) == [
        "org.apache.flink.runtime.JobException: Recovery is suppressed",
        "Caused by: java.lang.ArithmeticException: / by zero",
    ]
