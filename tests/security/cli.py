"""``make security-check``: the secured stack end to end, then every way in that must fail.

1. Kafka (SASL_SSL, SCRAM users, ACLs), Redis (TLS, ACL users) and Triton (gRPC over
   TLS, model control behind a key) start in the secured mode on free ports under
   ``.stack/security-<time>``.
2. The demo runs the first ``--events`` events through them, each part as its own
   principal; every second the listening sockets of the stack and of the demo's
   process tree are read from ``/proc``.
3. Strangers (no credentials, wrong passwords, plaintext) try Kafka, Redis and
   Triton's model control; roles try what their grants do not allow.
4. Every file the run wrote (the stack's logs, the demo's logs and reports, this
   command's output) is searched for every password and key.

Ends with ``RESULT secured_roundtrip=… non_loopback_listeners=… secrets_found=…
unauthenticated_accepted=… acl_violations_accepted=…``; exits 1 unless the round
trip passed and every count is 0.
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Sequence
from contextlib import redirect_stdout

from jobs.demo.services import ensure_model
from runtime.settings import DEFAULT_MODEL_DIR
from tests.benchmarks.report import print_table, result_line
from tests.conftest import REPO_ROOT
from tests.security.check import (
    ListenerWatch,
    leaks,
    probes,
    run_demo,
    secrets_of,
    secured_settings,
    stack_pids,
    stack_up,
    watching,
)
from tests.security.probes import Probe

REPORTS = REPO_ROOT / "reports" / "security"
DRIFT_REPORTS = REPO_ROOT / "reports" / "drift"


def say(text: str) -> None:
    print(f"[security {time.strftime('%H:%M:%S')}] {text}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.security",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=2000, help="events the demo replays")
    args = parser.parse_args(argv)
    home = REPO_ROOT / ".stack" / f"security-{time.strftime('%Y%m%d-%H%M%S')}"
    settings = secured_settings(home)
    model_dir = (REPO_ROOT / DEFAULT_MODEL_DIR).resolve()
    ensure_model(model_dir)
    REPORTS.mkdir(parents=True, exist_ok=True)
    demo_log = REPORTS / "demo.log"
    say(f"starting the secured Kafka, Redis and Triton in {home}")
    stack = stack_up(settings, model_dir)
    try:
        watch = ListenerWatch(stack_pids(stack))
        say(f"the demo on {args.events} events as per-role principals (output: {demo_log})")
        with watching(watch):
            demo_exit = run_demo(settings, model_dir, args.events, demo_log, watch)
        say(f"demo exit {demo_exit}; probing with strangers and overstepping roles")
        attempts = probes(settings)
    finally:
        stack.down()
    shown = io.StringIO()
    with redirect_stdout(shown):
        summary = report(watch, attempts, demo_exit)
    read, found = leaks(settings, [REPORTS, DRIFT_REPORTS], shown.getvalue())
    (REPORTS / "check.txt").write_text(shown.getvalue())
    print(shown.getvalue(), end="")
    print(
        f"\nsecrets searched for: {len(secrets_of(settings))} in {read} files; found {len(found)}"
    )
    for leak in found:
        print(f"  secret #{leak.secret_index} in {leak.where}")
    print(result_line(**summary, secrets_found=len(found)))
    ok = (
        summary["secured_roundtrip"] == 1
        and not found
        and not any(
            summary[key]
            for key in (
                "non_loopback_listeners",
                "unauthenticated_accepted",
                "acl_violations_accepted",
            )
        )
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def report(watch: ListenerWatch, attempts: list[Probe], demo_exit: int) -> dict[str, int]:
    rows = sorted(
        (name, item.address, str(item.port)) for (_a, _p, name), item in watch.seen.items()
    )
    print(f"\nlistening sockets of the stack and the demo ({watch.samples} samples)")
    print_table(["process", "address", "port"], rows)
    print("\nattempts that must be refused")
    print_table(
        ["kind", "attempt", "verdict", "detail"],
        [(p.kind, p.name, "ACCEPTED" if p.accepted else "refused", p.detail) for p in attempts],
    )
    return {
        "secured_roundtrip": int(demo_exit == 0),
        "non_loopback_listeners": len(watch.exposed()),
        "unauthenticated_accepted": sum(
            p.accepted for p in attempts if p.kind == "unauthenticated"
        ),
        "acl_violations_accepted": sum(p.accepted for p in attempts if p.kind == "acl"),
    }


def accepted(attempts: list[Probe], kind: str) -> int:
    return sum(probe.accepted for probe in attempts if probe.kind == kind)
