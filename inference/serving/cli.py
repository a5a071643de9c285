"""``streamrec-serving publish|rollout|load|rollback|status|canary``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence

import redis

from inference.serving import control, repository
from inference.serving.canary import Guards, parse_duration_s, parse_steps
from inference.serving.canary_metrics import CanaryMetrics
from inference.serving.canary_run import Canary, Outcome, Plan, RoutingStore
from inference.serving.errors import RolloutError, ServingError
from inference.serving.registered import publish_registered
from inference.serving.settings import MODELS, ServingSettings
from inference.serving.worker_metrics import scrape
from schemas.metrics_server import serve_registry
from schemas.model_registry import DEFAULT_TRACKING_URI, RegistryClient, is_model_uri, tracking_uri
from schemas.redact import install_redaction
from schemas.routing import routing_key


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-serving",
        description="Publish ranker versions into a Triton model repository and swap the served "
        "version with no failed request (explicit model control). Every flag defaults to its "
        "environment variable (in brackets).",
    )
    ServingSettings.add_flags(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    publish = commands.add_parser(
        "publish",
        help="copy an artifacts directory's served model into the next version "
        "of every model (does not change what Triton serves)",
    )
    # The subcommands' own spellings of --artifacts-dir and --model: SUPPRESS leaves
    # the value of the global flag (or the environment) when they are not given.
    publish.add_argument(
        "artifacts_dir",
        metavar="artifacts",
        nargs="?",
        default=argparse.SUPPRESS,
        help="artifacts directory (default: --artifacts-dir), or a version of the MLflow "
        "model registry: models:/<name>/<version> or models:/<name>@<alias> (the server: "
        "MLFLOW_TRACKING_URI, else http://127.0.0.1:5000)",
    )
    publish.add_argument(
        "--models",
        default=",".join(MODELS),
        help="comma-separated models to publish into (default: all)",
    )
    for name, text in {
        "rollout": "load a version beside the served one, probe it, then serve it alone "
        "(default: the newest published)",
        "load": "same as rollout",
        "rollback": "swap back to the newest published version older than the served one",
        "status": "published versions, pinned policy and Triton's state of the model",
    }.items():
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument(
            "--model",
            default=argparse.SUPPRESS,
            choices=MODELS,
            help="model to act on (default: the global --model)",
        )
        if name in ("rollout", "load"):
            sub.add_argument("--version", type=int, default=None, help="version to serve")
    add_canary(commands)
    return parser


def add_canary(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    text = (
        "load VERSION beside the served one and raise its share of users step by step "
        "while its errors, p99 and scores hold against the champion's (read from the "
        "workers' /metrics); promote it (and move the registry alias) or roll back"
    )
    canary = commands.add_parser("canary", help=text, description=text)
    canary.add_argument(
        "target",
        metavar="VERSION",
        help="a published version number, or models:/<name>/<version> | models:/<name>@<alias> "
        "(published first)",
    )
    canary.add_argument("--model", default=argparse.SUPPRESS, choices=MODELS)
    canary.add_argument("--steps", default="1,5,25,50,100", help="percent of users per step")
    canary.add_argument("--hold", default="60s", help="how long each step is held (60s, 2m)")
    canary.add_argument("--poll", default="2s", help="how often the figures are read")
    canary.add_argument(
        "--settle", default="3s", help="after a routing change, before figures count"
    )
    canary.add_argument(
        "--worker-metrics",
        default="http://127.0.0.1:9108",
        help="comma-separated /metrics URLs of every worker (default: the local one)",
    )
    canary.add_argument(
        "--endpoints",
        default="",
        help="comma-separated Triton HTTP URLs of every replica (default: --url)",
    )
    guards = Guards()
    canary.add_argument("--max-error-rate", type=float, default=guards.max_error_rate)
    canary.add_argument("--max-p99-ms", type=float, default=guards.max_p99_s * 1000)
    canary.add_argument("--max-score-psi", type=float, default=guards.max_score_psi)
    canary.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="serve streamrec_canary_breach/_share on this port while running (0 = off)",
    )
    canary.add_argument("--metrics-host", default="127.0.0.1", help="address --metrics-port binds")
    canary.add_argument(
        "--linger",
        default="120s",
        help="with --metrics-port: keep serving this long after a rollback, so the "
        "breach alert (for: 1m) fires",
    )
    canary.add_argument(
        "--registry",
        default=None,
        help="MLflow tracking URI for the alias and the outcome's tags (default: "
        "MLFLOW_TRACKING_URI; none: no registry)",
    )


def run_canary(args: argparse.Namespace, settings: ServingSettings) -> Outcome:
    try:
        plan = Plan(
            steps=parse_steps(args.steps),
            hold_s=parse_duration_s(args.hold),
            poll_s=parse_duration_s(args.poll),
            settle_s=parse_duration_s(args.settle),
            guards=Guards(
                max_error_rate=args.max_error_rate,
                max_p99_s=args.max_p99_ms / 1000,
                max_score_psi=args.max_score_psi,
            ),
        )
    except ValueError as error:
        raise ServingError(str(error)) from None
    registry_uri = args.registry if args.registry is not None else tracking_uri()
    target = args.target
    if is_model_uri(target):
        published = publish_registered(
            target, settings.repository, MODELS, registry_uri or DEFAULT_TRACKING_URI
        )
        print(f"published {target} as version {published.number}")
        target = str(published.number)
    if not target.isdigit():
        raise ServingError(f"canary {target!r}: a version number or a models:/ URI")
    urls = [u.strip() for u in (args.endpoints or settings.http_url).split(",") if u.strip()]
    tritons = [
        control.TritonControl(url, control_key=settings.control_key, tls_ca=settings.tls_ca)
        for url in urls
    ]
    workers = [u.strip() for u in args.worker_metrics.split(",") if u.strip()]
    client = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    store = RoutingStore(client, routing_key(settings.project, settings.model))
    registry = RegistryClient(registry_uri) if registry_uri else None
    metrics = CanaryMetrics()
    server = serve_registry(metrics.registry, args.metrics_port, args.metrics_host)
    try:
        outcome = Canary(
            tritons,
            settings.repository / settings.model,
            store,
            lambda: scrape(workers),
            registry,
            metrics=metrics,
        ).run(int(target), plan)
        if server is not None and outcome.breach is not None:
            time.sleep(parse_duration_s(args.linger))
        return outcome
    except redis.RedisError as error:
        raise ServingError(f"routing key in {settings.redis_url}: {error}") from None
    finally:
        if server is not None:
            server.shutdown()


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = ServingSettings.from_env(args=args)
    install_redaction(settings)  # the control key stays out of every log line
    if args.command == "publish":
        models = [name.strip() for name in args.models.split(",") if name.strip()]
        source = getattr(args, "artifacts_dir", None) or ""
        if is_model_uri(source):
            published = publish_registered(source, settings.repository, models)
            print(
                f"published {source} (version {published.version.version} of "
                f"{published.version.name}) as version {published.number} of "
                f"{', '.join(models)} in {settings.repository}"
            )
            return 0
        number = repository.publish(settings.artifacts_dir, settings.repository, models)
        print(
            f"published {settings.artifacts_dir} as version {number} of {', '.join(models)} "
            f"in {settings.repository}"
        )
        return 0
    triton = control.TritonControl(
        settings.http_url, control_key=settings.control_key, tls_ca=settings.tls_ca
    )
    model_dir = settings.repository / settings.model
    if args.command == "canary":
        outcome = run_canary(args, settings)
        if outcome.promoted:
            print(f"{settings.model}: canary {outcome.canary} promoted")
            return 0
        raise RolloutError(
            f"{settings.model}: canary {outcome.canary} rolled back to {outcome.champion} "
            f"in {outcome.rollback_s:.1f} s: {outcome.breach}"
        )
    if args.command in ("rollout", "load"):
        served = control.rollout(triton, model_dir, args.version)
        print(f"{settings.model}: serving version {served}")
    elif args.command == "rollback":
        served = control.rollback(triton, model_dir)
        print(f"{settings.model}: rolled back to version {served}")
    else:
        print(json.dumps(control.describe(triton, model_dir), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="serving: %(message)s", stream=sys.stderr)
    try:
        return run(argv)
    except ServingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
