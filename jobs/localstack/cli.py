"""`python -m jobs.localstack up|down|status [--services kafka,redis,flink]`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from jobs.localstack.errors import StackError
from jobs.localstack.observe import observe
from jobs.localstack.process import answers_http
from jobs.localstack.prometheus_server import part_targets
from jobs.localstack.roles import ROLES, role_env
from jobs.localstack.service import ServiceStatus
from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import ALIASES, OPTIONAL, REGISTRY, Stack

_KNOWN = ", ".join(name for name, _ in REGISTRY)
_ALIASES = "; ".join(f"{alias} = {'+'.join(members)}" for alias, members in ALIASES.items())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.localstack",
        description="Run the local streamrec stack (Kafka in KRaft mode, Redis, a standalone "
        "Flink cluster) as plain processes. Data and logs go to $STREAMREC_STACK_HOME (default "
        ".stack/); ports come from STREAMREC_KAFKA_PORT, STREAMREC_KAFKA_CONTROLLER_PORT, "
        "STREAMREC_REDIS_PORT, STREAMREC_FLINK_REST_PORT (also the web UI), "
        "STREAMREC_FLINK_RPC_PORT, STREAMREC_TRITON_HTTP_PORT, STREAMREC_TRITON_GRPC_PORT, "
        "STREAMREC_TRITON_METRICS_PORT; Triton serves STREAMREC_TRITON_MODEL_REPOSITORY "
        "(default .stack/models) and loads the published ones of STREAMREC_TRITON_MODELS. "
        "Prometheus (STREAMREC_PROMETHEUS_PORT) starts only when named or with `observe`.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    helps = {
        "up": "start the services (idempotent) and wait until they are healthy",
        "down": "stop the services, leaving no process behind",
        "status": "show the services; exit 1 if any is not healthy",
        "env": "write the variables one role of the pipeline runs with (an env file)",
        "observe": "start a Prometheus scraping every part on this machine (make observe) "
        "and print where to look",
    }
    for name, text in helps.items():
        sub = commands.add_parser(name, help=text, description=text)
        if name == "env":
            _env_flags(sub)
            continue
        if name == "observe":
            sub.add_argument(
                "--panels",
                type=float,
                default=0.0,
                metavar="MINUTES",
                help="also print every dashboard query's reading over the last MINUTES",
            )
            continue
        sub.add_argument(
            "--services",
            default="",
            help=f"comma-separated subset of: {_KNOWN} ({_ALIASES}) (default: all)",
        )
        if name == "up":
            sub.add_argument("--timeout", type=float, default=120.0, help="seconds per service")
    return parser


def _env_flags(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--role", required=True, choices=sorted(ROLES), help="the part to configure")
    sub.add_argument(
        "--out",
        type=Path,
        help="env file to write (NAME=value lines, mode 0600; for `docker --env-file`, "
        "systemd's EnvironmentFile or a process's environment); required in the secured "
        "mode, whose variables hold passwords that are never printed",
    )


def write_env(settings: StackSettings, role: str, out: Path | None) -> str:
    """Write ``role``'s variables to ``out`` (or return them, when nothing is secret)."""
    env = role_env(settings, role)
    text = "".join(f"{name}={value}\n" for name, value in env.items())
    if out is None:
        if settings.secure:
            raise StackError("the secured mode's variables hold passwords: give --out FILE")
        return text
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode otherwise
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    return f"wrote {len(env)} variables for {role} to {out}\n"


def format_table(rows: Sequence[ServiceStatus]) -> str:
    header = ("SERVICE", "STATE", "PID", "ENDPOINT", "METRICS", "LOG")
    cells = [header] + [
        (r.name, _state(r), str(r.pid or "-"), r.endpoint, r.metrics or "-", str(r.log_path))
        for r in rows
    ]
    return _aligned(cells)


def format_parts(answering: Mapping[str, bool], environ: Mapping[str, str]) -> str:
    """The pipeline parts' /metrics endpoints (not started by the stack) and whether they answer."""
    targets = part_targets(environ)
    cells = [("PART", "METRICS", "STATE")] + [
        (job, f"http://{target}/metrics", "answering" if answering.get(job) else "not running")
        for job, (target, *_) in targets.items()
    ]
    return _aligned(cells)


def _aligned(cells: Sequence[Sequence[str]]) -> str:
    header = cells[0]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def _state(row: ServiceStatus) -> str:
    if row.healthy:
        return "healthy"
    return "unhealthy" if row.running else "stopped"


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = StackSettings.from_env()
    if args.command == "env":
        print(write_env(settings, args.role, args.out), end="")
        return 0
    stack = Stack(settings)
    if args.command == "observe":
        print(observe(stack, panels_minutes=args.panels))
        return 0
    services = [name.strip() for name in args.services.split(",") if name.strip()] or None
    if args.command == "up":
        started = time.monotonic()
        stack.up(services, timeout_s=args.timeout)
        print(format_table(stack.status(services)))
        print(f"\nup in {time.monotonic() - started:.1f} s. To point clients at it:")
        for key, value in stack.exports(services).items():
            print(f"  export {key}={value}")
        return 0
    if args.command == "down":
        stack.down(services)
        print("stopped: " + ", ".join(row.name for row in stack.status(services)))
        return 0
    rows = stack.status(services)
    print(format_table(rows))
    if not services:
        answering = {job: metrics_answer(t[0]) for job, t in part_targets(os.environ).items()}
        print("\n" + format_parts(answering, os.environ))
    # An optional service (Prometheus) that was never started is not a failure.
    return 0 if all(row.healthy or _optional_and_off(row, services) for row in rows) else 1


def _optional_and_off(row: ServiceStatus, named: Sequence[str] | None) -> bool:
    return not named and row.name in OPTIONAL and not row.running


def metrics_answer(target: str, timeout_s: float = 1.0) -> bool:
    """Whether ``host:port`` serves /metrics now."""
    return answers_http(f"http://{target}/metrics", timeout_s)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="localstack: %(message)s", stream=sys.stderr)
    try:
        return run(argv)
    except StackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
